// SPDX-License-Identifier: Apache-2.0

package launcherplugins_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/handler-runtime/launcherplugins"
	"github.com/kubevirt-plugins/framework/handler-runtime/store"
)

type fixedPlugins []*pluginv1alpha1.Plugin

func (f fixedPlugins) Snapshot() (store.Snapshot, error) {
	return store.Snapshot{Plugins: f, Enabled: true, Revision: 1}, nil
}

// The host keeps the generation it last sent to each launcher and resends
// only when LauncherPlugins reports another one.
func Example() {
	sel, _ := launcherplugins.New(launcherplugins.Options{Plugins: fixedPlugins{{
		ObjectMeta: metav1.ObjectMeta{Name: "cpu-tuning"},
		Spec: pluginv1alpha1.PluginSpec{LauncherHooks: []pluginv1alpha1.LauncherHook{{
			CEL: &pluginv1alpha1.CELHook{HookPoint: pluginv1alpha1.GuestDefinition, Expression: `Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`},
		}}},
	}}})
	vmi := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "default"}}

	lastSent := map[string]string{} // VMI UID -> generation
	for range 2 {
		lp, err := sel.LauncherPlugins(vmi)
		if err != nil {
			panic(err)
		}
		if lastSent[string(vmi.UID)] == lp.Generation {
			fmt.Println("unchanged, nothing to send")
			continue
		}
		plugins, _ := launcherplugins.Decode(lp.Data)
		fmt.Println("sending", len(plugins), "plugin:", plugins[0].Name)
		lastSent[string(vmi.UID)] = lp.Generation
	}
	// Output:
	// sending 1 plugin: cpu-tuning
	// unchanged, nothing to send
}
