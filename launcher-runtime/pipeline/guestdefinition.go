package pipeline

import (
	"context"
	"errors"
	"fmt"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// GuestDefinition runs the GuestDefinition chain from domain and returns the
// domain to hand to libvirt. domain itself is never modified; the result is
// domain itself when no hook changed it, and may share unchanged parts with
// it otherwise.
//
// The legacy hook sidecars (Options.LegacyHooks) run first, then the plugin
// hooks: plugins in alphabetical order, hooks in declaration order. A CEL
// hook merges its Domain{...} into the domain; a sidecar hook receives the
// domain XML, the VMI as JSON and ic, and returns the complete domain XML.
//
// With ic == MigrationTarget every hook runs, so that sidecars can prepare
// the target Pod, and the result is discarded: the input domain is returned.
// The host never calls GuestDefinition on the migration source.
//
// The chain may run several times for one boot; hooks must be idempotent.
func (p *Pipeline) GuestDefinition(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, domain *libvirtxml.Domain, ic InvocationContext) (*libvirtxml.Domain, error) {
	switch {
	case domain == nil:
		return nil, errors.New("GuestDefinition: no domain given")
	case vmi == nil:
		return nil, errors.New("GuestDefinition: no VMI given")
	case ic != Boot && ic != MigrationTarget:
		return nil, fmt.Errorf("GuestDefinition: invocation context %q is neither %s nor %s", ic, Boot, MigrationTarget)
	}
	current := domain
	if p.opts.LegacyHooks != nil {
		var err error
		if current, err = p.runLegacyHooks(ctx, vmi, current); err != nil {
			return nil, err
		}
	}
	c := p.newCall(pluginv1alpha1.GuestDefinition, vmi)
	err := c.run(ctx, func(ctx context.Context, pl *compiledPlugin, h *compiledHook) error {
		if h.hook.CEL != nil {
			next, err := h.transform.apply(ctx, vmi, current)
			if err != nil {
				return err
			}
			current = next
			return nil
		}
		next, err := c.guestDefinitionSidecar(ctx, pl, h, current, ic)
		if err != nil {
			return err
		}
		current = next
		return nil
	})
	if err != nil {
		return nil, err
	}
	if ic == MigrationTarget {
		return domain, nil
	}
	return current, nil
}

func (p *Pipeline) runLegacyHooks(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, domain *libvirtxml.Domain) (*libvirtxml.Domain, error) {
	in, err := domain.Marshal()
	if err != nil {
		return nil, fmt.Errorf("legacy hook sidecars at GuestDefinition: encoding the domain: %w", err)
	}
	out, err := p.opts.LegacyHooks.RunGuestDefinition(ctx, vmi, []byte(in))
	if err != nil {
		return nil, fmt.Errorf("legacy hook sidecars at GuestDefinition: %w", err)
	}
	next, err := parseDomain(out)
	if err != nil {
		return nil, fmt.Errorf("legacy hook sidecars at GuestDefinition: %w", err)
	}
	return next, nil
}

func (c *call) guestDefinitionSidecar(ctx context.Context, pl *compiledPlugin, h *compiledHook, domain *libvirtxml.Domain, ic InvocationContext) (*libvirtxml.Domain, error) {
	domainXML, err := domain.Marshal()
	if err != nil {
		return nil, fmt.Errorf("encoding the domain: %w", err)
	}
	var resp *hooksv1alpha1.GuestDefinitionResponse
	err = c.callSidecar(ctx, pl, h, func(ctx context.Context, client hooksv1alpha1.LauncherHookServiceClient, vmiJSON []byte) error {
		var err error
		resp, err = client.GuestDefinition(ctx, &hooksv1alpha1.GuestDefinitionRequest{
			DomainXml:      []byte(domainXML),
			Vmi:            vmiJSON,
			SidecarContext: &hooksv1alpha1.SidecarContext{InvocationContext: string(ic)},
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	next, err := parseDomain(resp.GetDomainXml())
	if err != nil {
		return nil, fmt.Errorf("sidecar response: %w", err)
	}
	return next, nil
}

// parseDomain decodes a complete domain XML document.
func parseDomain(data []byte) (*libvirtxml.Domain, error) {
	if len(data) == 0 {
		return nil, errors.New("empty domain XML")
	}
	d := &libvirtxml.Domain{}
	if err := d.Unmarshal(string(data)); err != nil {
		return nil, fmt.Errorf("invalid domain XML: %w", err)
	}
	return d, nil
}
