// SPDX-License-Identifier: Apache-2.0

package handler

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/api/plugin/v1alpha1/required"
	"github.com/kubevirt-plugins/framework/handler-runtime/dispatch"
	"github.com/kubevirt-plugins/framework/handler-runtime/launcherplugins"
)

// TestVMIRequiringAPluginDoesNotStartUntilItIsReadyAndSelectsIt: a VMI
// annotated plugin.kubevirt.io/required does not start while the Plugin
// is missing, not Ready, or not selecting it: PreVMStart fails before any
// node hook is called and the launcher is refused its plugins, each time
// naming the Plugin and why. Plugins come from the real API server through
// the store; the Ready condition is written as the plugin-controller does.
func TestVMIRequiringAPluginDoesNotStartUntilItIsReadyAndSelectsIt(t *testing.T) {
	rec := startRecorder(t, "required", "hook.sock", "required")
	vmi := newVMI("requires-enc", nil)
	vmi.Annotations = map[string]string{required.Annotation: "enc-required"}
	refused := func(want string) {
		t.Helper()
		err := dispatcher.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi, dispatch.NodeContext{NodeName: "node-1"})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("PreVMStart: %v, want it to fail saying %q", err, want)
		}
		if _, err := launchers.LauncherPlugins(vmi); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LauncherPlugins: %v, want a refusal saying %q", err, want)
		}
	}

	refused(`plugin "enc-required" Missing: no Plugin of that name exists`)

	p := newPlugin("enc-required", `"secure" in vmi.Labels`, nodeHook(rec.Socket, pluginv1alpha1.PreVMStart))
	p.Spec.LauncherHooks = []pluginv1alpha1.LauncherHook{{CEL: &pluginv1alpha1.CELHook{HookPoint: pluginv1alpha1.GuestDefinition, Expression: `Domain{}`}}}
	createPlugins(t, p)
	refused(`plugin "enc-required" NotReady: it has no Ready condition yet`)

	p.Status.Conditions = []metav1.Condition{{Type: pluginv1alpha1.ConditionReady, Status: metav1.ConditionTrue,
		ObservedGeneration: p.Generation, Reason: "Ready", Message: "ready", LastTransitionTime: metav1.Now()}}
	if err := server.Client.Status().Update(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	waitForStore(t, p)
	refused(`plugin "enc-required" NotSelected: its condition "\"secure\" in vmi.Labels" is false for this VMI`)
	if calls := readEvents(t, rec.Events); len(calls) != 0 {
		t.Fatalf("node hooks called while the VMI was refused: %v", calls)
	}

	vmi.Labels = map[string]string{"secure": "yes"}
	if err := dispatcher.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi, dispatch.NodeContext{NodeName: "node-1"}); err != nil {
		t.Fatalf("PreVMStart with the required Plugin Ready and selecting the VMI: %v", err)
	}
	if calls := readEvents(t, rec.Events); len(calls) != 1 || calls[0].HookPoint != "PreVMStart" {
		t.Errorf("recorded calls %v, want the one PreVMStart", calls)
	}
	lp, err := launchers.LauncherPlugins(vmi)
	if err != nil {
		t.Fatal(err)
	}
	if plugins, err := launcherplugins.Decode(lp.Data); err != nil || len(plugins) != 1 || plugins[0].Name != "enc-required" {
		t.Errorf("launcher handed %v (%v), want enc-required", plugins, err)
	}
}
