// SPDX-License-Identifier: Apache-2.0

package handler

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/handler-runtime/launcherplugins"
)

func TestLaunchersReceivePluginsWithLauncherHooksAndANewGenerationOnChange(t *testing.T) {
	withSidecar := func(name string) *pluginv1alpha1.Plugin {
		p := newPlugin(name, "")
		p.Spec.LauncherHooks = []pluginv1alpha1.LauncherHook{{Sidecar: &pluginv1alpha1.SidecarHook{
			SocketPath:     pluginv1alpha1.PluginDir(name) + "hook.sock",
			PermittedHooks: []pluginv1alpha1.LauncherHookPoint{pluginv1alpha1.PreBoot},
		}}}
		return p
	}
	zulu, alpha := withSidecar("zulu"), withSidecar("alpha")
	nodeOnly := newPlugin("node-only", "", nodeHook("/var/run/kubevirt/plugins/x.sock", pluginv1alpha1.PreVMStart))
	createPlugins(t, zulu, nodeOnly, alpha)
	vmi := newVMI("vm-launcher", nil)

	first, err := launchers.LauncherPlugins(vmi)
	if err != nil {
		t.Fatal(err)
	}
	got, err := launcherplugins.Decode(first.Data)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "alpha" || got[1].Name != "zulu" {
		t.Fatalf("launcher plugins = %v, want alpha and zulu in that order", names(got))
	}
	if strings.Contains(string(first.Data), "managedFields") {
		t.Fatal("serialized plugins still carry managedFields")
	}
	again, err := launchers.LauncherPlugins(newVMI("another-vm", nil))
	if err != nil {
		t.Fatal(err)
	}
	if again.Generation != first.Generation {
		t.Fatal("generation changed although no Plugin did")
	}

	zulu.Spec.LauncherHooks[0].Sidecar.PermittedHooks = append(zulu.Spec.LauncherHooks[0].Sidecar.PermittedHooks, pluginv1alpha1.GuestDefinition)
	if err := server.Client.Update(t.Context(), zulu); err != nil {
		t.Fatal(err)
	}
	waitForStore(t, zulu)
	edited, err := launchers.LauncherPlugins(vmi)
	if err != nil {
		t.Fatal(err)
	}
	if edited.Generation == first.Generation {
		t.Fatal("generation did not change after a Plugin was edited")
	}

	pluginsGate.Store(false)
	t.Cleanup(func() { pluginsGate.Store(true) })
	off, err := launchers.LauncherPlugins(vmi)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := launcherplugins.Decode(off.Data); err != nil || len(got) != 0 || off.Generation == edited.Generation {
		t.Fatalf("with the gate off: %d plugins (%v), generation changed %v; want none and a new generation", len(got), err, off.Generation != edited.Generation)
	}
}

func names(ps []pluginv1alpha1.Plugin) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func TestStatusWritesAndMetadataEditsDoNotChangeWhatLaunchersAreHanded(t *testing.T) {
	p := newPlugin("status-writes", "")
	p.Spec.LauncherHooks = []pluginv1alpha1.LauncherHook{{Sidecar: &pluginv1alpha1.SidecarHook{
		SocketPath:     pluginv1alpha1.PluginDir(p.Name) + "hook.sock",
		PermittedHooks: []pluginv1alpha1.LauncherHookPoint{pluginv1alpha1.PreBoot},
	}}}
	createPlugins(t, p)
	vmi := newVMI("vm-status-writes", nil)
	first, err := launchers.LauncherPlugins(vmi)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()

	// What the plugin controller writes: the status subresource.
	p.Status = pluginv1alpha1.PluginStatus{ObservedGeneration: p.Generation, LauncherHooks: 1, Conditions: []metav1.Condition{{
		Type: "Ready", Status: metav1.ConditionTrue, Reason: "HooksReachable", Message: "all hooks reachable",
		LastTransitionTime: metav1.Now(),
	}}}
	if err := server.Client.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	waitForStore(t, p)
	if lp, err := launchers.LauncherPlugins(vmi); err != nil || lp.Generation != first.Generation {
		t.Fatalf("after a status write: generation changed %v (%v); data %s", lp.Generation != first.Generation, err, lp.Data)
	}

	p.Annotations = map[string]string{"example.com/owner": "team-a"}
	if err := server.Client.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	waitForStore(t, p)
	if lp, err := launchers.LauncherPlugins(vmi); err != nil || lp.Generation != first.Generation {
		t.Fatalf("after an annotation edit: generation changed %v (%v); data %s", lp.Generation != first.Generation, err, lp.Data)
	}

	p.Spec.LauncherHooks[0].Sidecar.PermittedHooks = append(p.Spec.LauncherHooks[0].Sidecar.PermittedHooks, pluginv1alpha1.GuestDefinition)
	if err := server.Client.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	waitForStore(t, p)
	edited, err := launchers.LauncherPlugins(vmi)
	if err != nil {
		t.Fatal(err)
	}
	if edited.Generation == first.Generation {
		t.Fatal("a spec edit left the generation unchanged")
	}
	got, err := launcherplugins.Decode(edited.Data)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Generation != p.Generation || len(got[0].Spec.LauncherHooks[0].Sidecar.PermittedHooks) != 2 {
		t.Fatalf("launcher is handed %s, want the edited spec at generation %d", edited.Data, p.Generation)
	}
}
