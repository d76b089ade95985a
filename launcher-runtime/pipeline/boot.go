// SPDX-License-Identifier: Apache-2.0

package pipeline

import (
	"context"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// The three entry points below are the launcher's life in hook terms: a
// boot, the target side of a migration and the source side. A host that
// uses them cannot run a hook point where the user guide says it does not
// run.

// Boot runs the hooks of a VM boot in the order the user guide gives:
// GuestDefinition (context Boot) on the generated domain first, then
// PreBoot on the boot artifacts. It returns the domain to define; when
// GuestDefinition fails, PreBoot does not run. A host that generates its
// boot artifacts between the two calls GuestDefinition and PreBoot itself,
// in this order.
func (p *Pipeline) Boot(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, domain *libvirtxml.Domain, artifacts Artifacts) (*libvirtxml.Domain, error) {
	out, err := p.GuestDefinition(ctx, vmi, domain, Boot)
	if err != nil {
		return nil, err
	}
	if err := p.PreBoot(ctx, vmi, artifacts); err != nil {
		return nil, err
	}
	return out, nil
}

// MigrationTarget runs the hooks of the target side of a migration:
// GuestDefinition with the MigrationTarget context, so that sidecars can
// prepare the target Pod. Its result is discarded (the target runs the
// domain migrated from the source) and PreBoot does not run: the boot
// artifacts were used at boot, on the source.
func (p *Pipeline) MigrationTarget(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, domain *libvirtxml.Domain) error {
	_, err := p.GuestDefinition(ctx, vmi, domain, MigrationTarget)
	return err
}

// MigrationSource runs the hooks of the source side of a migration: only
// PreMigrationSource. GuestDefinition does not run on the source.
//
// Deprecated: call PreMigrationSource, which it only calls.
func (p *Pipeline) MigrationSource(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, flags uint64, params *hooksv1alpha1.MigrationParams) (*MigrationResult, error) {
	return p.PreMigrationSource(ctx, vmi, flags, params)
}
