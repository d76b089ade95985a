// SPDX-License-Identifier: Apache-2.0

package pipeline

import (
	"context"

	kubevirtv1 "kubevirt.io/api/core/v1"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
	"github.com/kubevirt-plugins/framework/protos/sdk"
)

// InvocationContext says why GuestDefinition runs; sidecars receive it in
// sidecar_context.invocation_context (hooksv1alpha1.InvocationContext).
type InvocationContext = hooksv1alpha1.InvocationContext

const (
	// Boot: the domain is about to be defined and started.
	Boot = hooksv1alpha1.InvocationBoot
	// MigrationTarget: the launcher is the target of a migration. Hooks run
	// so that sidecars can prepare the target Pod; their domain is discarded.
	MigrationTarget = hooksv1alpha1.InvocationMigrationTarget
)

// Artifacts are the boot artifacts PreBoot sidecars may edit, as paths
// inside the compute container.
type Artifacts struct {
	// CloudInitISO is the generated cloud-init ISO; empty when the VM has
	// no cloud-init volume.
	CloudInitISO string
	// EphemeralDiskDir holds the ephemeral disks. Default (empty):
	// pluginv1alpha1.EphemeralDiskDir.
	EphemeralDiskDir string
}

// MigrationResult is the migration configuration after every
// PreMigrationSource hook: what the launcher hands to libvirt as-is.
type MigrationResult struct {
	// Flags is the VIR_MIGRATE_* bitmask.
	Flags uint64
	// Params are the VIR_MIGRATE_PARAM_* parameters; a field is set when
	// its wrapper is present (scalar with a value, list with values).
	Params *hooksv1alpha1.MigrationParams
}

// PostCopy reports whether the resulting flags carry VIR_MIGRATE_POSTCOPY:
// the migration monitor may switch to post-copy only when it does.
func (r *MigrationResult) PostCopy() bool {
	return r != nil && sdk.MigrationFlags(r.Flags).Has(sdk.MigratePostcopy)
}

// LegacyHooks runs the legacy annotation-based hook sidecars, which see the
// domain before any plugin hook does.
type LegacyHooks interface {
	// RunGuestDefinition passes the domain XML through every legacy hook
	// sidecar and returns the XML they produced.
	RunGuestDefinition(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, domainXML []byte) ([]byte, error)
}
