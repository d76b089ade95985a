package pipeline

import (
	"context"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

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
