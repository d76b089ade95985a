// SPDX-License-Identifier: Apache-2.0

// Command framework-driver is the cold-start benchmark's process for this
// project: it loads its inputs, then measures, once, what one VM costs a
// fresh virt-launcher or virt-handler process (see tests/coldstart).
//
//	framework-driver launcher DOMAIN.xml VMI.yaml PLUGINS.json
//
// launcher: decode the plugins virt-handler handed over, pipeline.New,
// GuestDefinition (Boot) on the domain, PreBoot.
//
//	framework-driver handler DOMAIN.xml VMI.yaml PLUGINS.json
//
// handler: dispatch.New over a store holding the plugins, one dispatch of
// the VMI at PreVMStart.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/handler-runtime/dispatch"
	"github.com/kubevirt-plugins/framework/handler-runtime/launcherplugins"
	"github.com/kubevirt-plugins/framework/handler-runtime/store"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
	"github.com/kubevirt-plugins/framework/tests/coldstart/internal/probe"
)

func main() {
	name, in := probe.Args("launcher|handler")
	ctx := context.Background()
	switch name {
	case "launcher":
		probe.Run("launcher", func() error { return launcher(ctx, in) })
	case "handler":
		// The store of a running virt-handler holds the Plugins already.
		plugins, err := launcherplugins.Decode(in.Plugins)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		probe.Run("handler", func() error { return handler(ctx, in, plugins) })
	default:
		probe.Unknown(name)
	}
}

func launcher(ctx context.Context, in probe.Inputs) error {
	plugins, err := launcherplugins.Decode(in.Plugins)
	if err != nil {
		return err
	}
	p, err := pipeline.New(plugins, pipeline.Options{})
	if err != nil {
		return err
	}
	defer p.Close()
	out, err := p.GuestDefinition(ctx, in.VMI, in.Domain, pipeline.Boot)
	if err != nil {
		return err
	}
	// Every plugins file of the benchmark holds the CPU mode hook.
	if len(plugins) > 0 && (out.CPU == nil || out.CPU.Mode != "host-passthrough") {
		return errors.New("the CEL hook did not set the CPU mode")
	}
	return p.PreBoot(ctx, in.VMI, pipeline.Artifacts{})
}

// fixedPlugins is a store that holds the same Plugins for good.
type fixedPlugins []*pluginv1alpha1.Plugin

func (f fixedPlugins) Snapshot() (store.Snapshot, error) {
	return store.Snapshot{Plugins: f, Enabled: true, Revision: 1}, nil
}

func handler(ctx context.Context, in probe.Inputs, plugins []pluginv1alpha1.Plugin) error {
	held := make(fixedPlugins, len(plugins))
	for i := range plugins {
		held[i] = &plugins[i]
	}
	d, err := dispatch.New(dispatch.Options{Plugins: held})
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Dispatch(ctx, pluginv1alpha1.PreVMStart, in.VMI, dispatch.NodeContext{NodeName: "node01"})
}
