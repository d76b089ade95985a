package pipeline

import (
	"context"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

// Report is what one hook point call did, hook by hook. The *WithReport
// methods return it with their result, also when the call fails.
type Report struct {
	// HookPoint is the hook point called.
	HookPoint pluginv1alpha1.LauncherHookPoint
	// Hooks are the hooks whose result the chain used, in the order they
	// ran.
	Hooks []HookReport
	// Changed are the parts of the domain the hooks changed, each with the
	// last hook that changed it, in the order of their last change
	// (GuestDefinition; sidecars only when tracked, see HookReport).
	Changed []Change
	// Overlaps are the parts of the domain a hook changed after a hook of
	// another plugin had, in the order found (GuestDefinition).
	Overlaps []Overlap
}

// Change is a part of the domain and the last hook that changed it.
type Change struct {
	Path string
	Hook HookRef
}

// HookReport is what one hook did in a hook point call.
type HookReport struct {
	HookRef
	// Written are the parts of the domain the hook changed, at
	// GuestDefinition: paths of Go field names from Domain ("CPU.Mode",
	// "Devices.Disks[1].Driver.Cache"); "" is the whole domain. A CEL
	// hook's come from its merge; a sidecar's from comparing the domain it
	// was given with its answer, when sidecars are tracked
	// (Options.TrackSidecarWrites).
	Written []string
	// WrittenKnown is false for a sidecar hook whose answer was not
	// compared: Written is then empty whatever it changed.
	WrittenKnown bool
}

// GuestDefinitionWithReport is GuestDefinition, also returning what each
// hook changed and the overlaps between plugins.
func (p *Pipeline) GuestDefinitionWithReport(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, domain *libvirtxml.Domain, ic InvocationContext) (*libvirtxml.Domain, *Report, error) {
	r := &Report{HookPoint: pluginv1alpha1.GuestDefinition}
	out, err := p.guestDefinition(ctx, vmi, domain, ic, r)
	return out, r, err
}
