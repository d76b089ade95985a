// SPDX-License-Identifier: Apache-2.0

package pipeline_test

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
)

// A launcher builds one Pipeline from the Plugins it was handed and runs the
// GuestDefinition chain on the domain it generated.
func Example() {
	plugins := []pluginv1alpha1.Plugin{{
		ObjectMeta: metav1.ObjectMeta{Name: "cpu-tuning"},
		Spec: pluginv1alpha1.PluginSpec{
			Condition: `"example.com/tuning" in vmi.Labels`,
			LauncherHooks: []pluginv1alpha1.LauncherHook{{
				CEL: &pluginv1alpha1.CELHook{
					HookPoint:  pluginv1alpha1.GuestDefinition,
					Expression: `Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`,
				},
			}},
		},
	}}
	p, err := pipeline.New(plugins, pipeline.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	vmi := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{
		Name:   "web-01",
		Labels: map[string]string{"example.com/tuning": "cpu"},
	}}
	domain := &libvirtxml.Domain{
		Type: "kvm",
		Name: "default_web-01",
		CPU:  &libvirtxml.DomainCPU{Mode: "host-model", Topology: &libvirtxml.DomainCPUTopology{Sockets: 1, Cores: 2, Threads: 1}},
	}
	out, err := p.GuestDefinition(context.Background(), vmi, domain, pipeline.Boot)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.CPU.Mode, out.CPU.Topology.Cores, domain.CPU.Mode)
	// Output: host-passthrough 2 host-model
}
