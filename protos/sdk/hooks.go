// SPDX-License-Identifier: Apache-2.0

package sdk

import (
	"context"
	"slices"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// Launcher hook points, as named in a Plugin's permittedHooks (the
// pluginv1alpha1.LauncherHookPoint values, as strings).
const (
	HookGuestDefinition    = string(pluginv1alpha1.GuestDefinition)
	HookPreBoot            = string(pluginv1alpha1.PreBoot)
	HookPreMigrationSource = string(pluginv1alpha1.PreMigrationSource)
)

// InvocationContext says why GuestDefinition is called
// (hooksv1alpha1.InvocationContext).
type InvocationContext = hooksv1alpha1.InvocationContext

const (
	// InvocationBoot: the domain is about to be defined and started.
	InvocationBoot = hooksv1alpha1.InvocationBoot
	// InvocationMigrationTarget: the launcher is a migration target; the
	// returned domain is discarded, the hook may prepare the target Pod.
	InvocationMigrationTarget = hooksv1alpha1.InvocationMigrationTarget
)

// NodeHookPoint names a VM lifecycle event a node hook server is called at:
// the API's type, so that a Plugin's nodeHooks[].permittedHooks and a
// server's hook points are the same values.
type NodeHookPoint = pluginv1alpha1.NodeHookPoint

// Node hook points, as named in a Plugin's nodeHooks[].permittedHooks.
const (
	NodeHookPreVMStart          = pluginv1alpha1.PreVMStart
	NodeHookPostVMStart         = pluginv1alpha1.PostVMStart
	NodeHookOnVMStop            = pluginv1alpha1.OnVMStop
	NodeHookPostVMStop          = pluginv1alpha1.PostVMStop
	NodeHookPreMigrationSource  = pluginv1alpha1.NodePreMigrationSource
	NodeHookPreMigrationTarget  = pluginv1alpha1.PreMigrationTarget
	NodeHookPostMigrationTarget = pluginv1alpha1.PostMigrationTarget
)

// NodeHookPoints lists every node hook point in lifecycle order
// (pluginv1alpha1.NodeHookPoints); the caller may modify the slice.
func NodeHookPoints() []NodeHookPoint {
	return slices.Clone(pluginv1alpha1.NodeHookPoints)
}

// GuestDefinitionRequest is a decoded GuestDefinition call.
type GuestDefinitionRequest struct {
	// VMI is the VirtualMachineInstance the domain belongs to.
	VMI *kubevirtv1.VirtualMachineInstance
	// Domain is the domain as generated and as changed by earlier hooks. The
	// handler may modify it in place and return it.
	Domain *libvirtxml.Domain
	// InvocationContext is Boot or MigrationTarget.
	InvocationContext InvocationContext
	// Raw is the request as received.
	Raw *hooksv1alpha1.GuestDefinitionRequest
}

// PreBootRequest is a decoded PreBoot call.
type PreBootRequest struct {
	VMI *kubevirtv1.VirtualMachineInstance
	// CloudInitISO is the path of the generated cloud-init ISO inside the
	// compute container, empty when the VM has no cloud-init volume.
	CloudInitISO string
	// EphemeralDiskDir is the directory of the ephemeral disks.
	EphemeralDiskDir string
	Raw              *hooksv1alpha1.PreBootRequest
}

// PreMigrationSourceRequest is a decoded PreMigrationSource call.
type PreMigrationSourceRequest struct {
	VMI *kubevirtv1.VirtualMachineInstance
	// Flags are the VIR_MIGRATE_* flags about to be passed to libvirt.
	Flags MigrationFlags
	// Params are the migration parameters about to be passed to libvirt.
	Params MigrationParams
	Raw    *hooksv1alpha1.PreMigrationSourceRequest
}

// NodeHookRequest is a decoded ExecuteNodeHook call.
type NodeHookRequest struct {
	HookPoint NodeHookPoint
	VMI       *kubevirtv1.VirtualMachineInstance
	// NodeName is the node virt-handler runs on.
	NodeName string
	Raw      *hooksv1alpha1.ExecuteNodeHookRequest
}

// GuestDefinitionHandler handles the GuestDefinition launcher hook. It
// returns the complete domain to continue with (nil keeps the request's
// domain unchanged). It may be called several times per boot and must be
// idempotent: called on its own output it must return the same domain.
type GuestDefinitionHandler interface {
	GuestDefinition(ctx context.Context, req *GuestDefinitionRequest) (*libvirtxml.Domain, error)
}

// PreBootHandler handles the PreBoot launcher hook. It may run again after a
// failed start; file changes must be idempotent and atomic (AtomicWriteFile).
type PreBootHandler interface {
	PreBoot(ctx context.Context, req *PreBootRequest) error
}

// PreMigrationSourceHandler handles the PreMigrationSource launcher hook. It
// returns only the changes to make; nil changes nothing.
type PreMigrationSourceHandler interface {
	PreMigrationSource(ctx context.Context, req *PreMigrationSourceRequest) (*MigrationChanges, error)
}

// NodeHookHandler handles node hooks. It may be called more than once for
// the same event and must be idempotent.
type NodeHookHandler interface {
	ExecuteNodeHook(ctx context.Context, req *NodeHookRequest) error
}

// ImplementedLauncherHooks returns the launcher hook points handler
// implements, in hook point order.
func ImplementedLauncherHooks(handler any) []string {
	var out []string
	if _, ok := handler.(GuestDefinitionHandler); ok {
		out = append(out, HookGuestDefinition)
	}
	if _, ok := handler.(PreBootHandler); ok {
		out = append(out, HookPreBoot)
	}
	if _, ok := handler.(PreMigrationSourceHandler); ok {
		out = append(out, HookPreMigrationSource)
	}
	return out
}
