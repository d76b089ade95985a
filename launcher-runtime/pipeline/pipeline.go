package pipeline

import (
	"context"
	"errors"

	"libvirt.org/go/libvirtxml"
	kubevirtv1 "kubevirt.io/api/core/v1"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// Pipeline runs the launcher hooks of a fixed set of Plugins. It is safe for
// concurrent use.
type Pipeline struct {
	opts Options
}

// New validates the plugins, compiles their CEL expressions and returns a
// Pipeline that runs their launcher hooks.
func New(plugins []pluginv1alpha1.Plugin, opts Options) (*Pipeline, error) {
	return &Pipeline{opts: opts.withDefaults()}, nil
}

var errNotYet = errors.New("not implemented yet")

// GuestDefinition runs the GuestDefinition chain and returns the domain to
// hand to libvirt.
func (p *Pipeline) GuestDefinition(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, domain *libvirtxml.Domain, ic InvocationContext) (*libvirtxml.Domain, error) {
	return nil, errNotYet
}

// PreBoot runs the PreBoot sidecars in order.
func (p *Pipeline) PreBoot(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, artifacts Artifacts) error {
	return errNotYet
}

// PreMigrationSource runs the PreMigrationSource sidecars and returns the
// migration configuration to hand to libvirt.
func (p *Pipeline) PreMigrationSource(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, flags uint64, params *hooksv1alpha1.MigrationParams) (*MigrationResult, error) {
	return nil, errNotYet
}
