// SPDX-License-Identifier: Apache-2.0

package hook

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"libvirt.org/go/libvirtxml"

	"github.com/kubevirt-plugins/framework/protos/sdk"
)

// Label is the VMI label this template reads. Labels and annotations of
// the VMI are the usual way for a VM owner to configure a plugin.
const Label = "template.example.com/description"

// Options configure a Handler. Give every field a documented default and
// keep the handler free of globals: tests create as many handlers as they
// need.
type Options struct {
	// Logger: default logr.Discard().
	Logger logr.Logger
}

// Handler serves the hook points of the plugin. The SDK registers the RPCs
// of the sdk.*Handler interfaces it implements, and only those: implement
// exactly the hook points listed in the Plugin's permittedHooks.
type Handler struct {
	log logr.Logger
}

// The compiler checks that the handler implements the interfaces you mean
// it to. Add sdk.PreBootHandler or sdk.PreMigrationSourceHandler here when
// you implement them.
var _ sdk.GuestDefinitionHandler = (*Handler)(nil)

// New returns a Handler.
func New(opts Options) *Handler {
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	return &Handler{log: opts.Logger}
}

// GuestDefinition receives the decoded VMI and domain and returns the
// domain to continue with (nil: unchanged).
//
// Rules of the hook point:
//   - It may be called several times during one boot, each time with the
//     domain as it is then, possibly your own earlier output: it must be
//     idempotent. Set values; do not append to lists blindly.
//   - On a migration target (req.InvocationContext ==
//     sdk.InvocationMigrationTarget) the returned domain is discarded; use
//     the call to prepare the target Pod if you need to.
//   - Return an error to fail the boot (with failureStrategy Fail). A
//     status error (google.golang.org/grpc/status) keeps its code; a panic
//     becomes an Internal error.
func (h *Handler) GuestDefinition(ctx context.Context, req *sdk.GuestDefinitionRequest) (*libvirtxml.Domain, error) {
	text, ok := req.VMI.Labels[Label]
	if !ok {
		return nil, nil
	}
	req.Domain.Description = fmt.Sprintf("template: %s", text)
	h.log.V(1).Info("set description", "vmi", req.VMI.Namespace+"/"+req.VMI.Name)
	return req.Domain, nil
}

// To handle PreBoot as well, add the hook point to the Plugin's
// permittedHooks and implement:
//
//	func (h *Handler) PreBoot(ctx context.Context, req *sdk.PreBootRequest) error
//
// req.CloudInitISO and req.EphemeralDiskDir are paths in the compute
// container; mount the ephemeral-disks volume at the same path. Replace
// files with sdk.AtomicWriteFile and check ctx before writing.
//
// For PreMigrationSource:
//
//	func (h *Handler) PreMigrationSource(ctx context.Context, req *sdk.PreMigrationSourceRequest) (*sdk.MigrationChanges, error)
//
// Read req.Flags and req.Params; return only changes, built with
// sdk.NewMigrationChanges().
