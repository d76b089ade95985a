// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	kubevirtv1 "kubevirt.io/api/core/v1"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/api/plugin/v1alpha1/required"
)

func readyPlugin(p *pluginv1alpha1.Plugin) *pluginv1alpha1.Plugin {
	p.Generation = 1
	p.Status.Conditions = []metav1.Condition{{Type: pluginv1alpha1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: "Ready"}}
	return p
}

// TestPreVMStartFailsNamingTheRequiredPluginAndWhy: a VMI that requires
// Plugins does not start while one is missing, not Ready or not selecting
// it: PreVMStart fails before any hook is called, naming the Plugin and
// why, and an Event says so; other hook points and other VMIs go on.
func TestPreVMStartFailsNamingTheRequiredPluginAndWhy(t *testing.T) {
	root := socketRoot(t)
	j := &journal{}
	sock := serve(t, root, &hookServer{name: "enc", journal: j})
	enc := readyPlugin(plugin("enc", `vmi.Labels["tier"] == "gold"`, nodeHook(sock, pluginv1alpha1.PreVMStart, pluginv1alpha1.PostVMStop)))
	rec := record.NewFakeRecorder(10)
	src := &staticPlugins{snap: storeSnapshot(enc)}
	d, err := New(Options{Plugins: src, SocketRoots: []string{root}, EventRecorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	requiring := func(labels map[string]string) *kubevirtv1.VirtualMachineInstance {
		v := vmi("secure", labels)
		v.Annotations = map[string]string{required.Annotation: "enc,audit"}
		return v
	}
	err = d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, requiring(map[string]string{"tier": "silver"}), NodeContext{})
	rerr, ok := errors.AsType[*required.Error](err)
	if !ok {
		t.Fatalf("PreVMStart: %v, want a *required.Error", err)
	}
	for _, want := range []string{"dispatching node hook point PreVMStart for VMI default/secure", `plugin "enc" NotSelected`, `plugin "audit" Missing`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if len(rerr.Unmet) != 2 || len(j.all()) != 0 {
		t.Errorf("unmet %v, calls %v: want two unmet Plugins and no hook called", rerr.Unmet, j.all())
	}
	if events := drain(rec); len(events) != 2 || !strings.Contains(events[0], ReasonRequiredPluginUnavailable) || !strings.Contains(events[1], `"audit"`) {
		t.Errorf("Events %q, want one %s per unmet Plugin", events, ReasonRequiredPluginUnavailable)
	}
	// Not at the other hook points: a VM that runs is stopped as usual.
	if err := d.Dispatch(t.Context(), pluginv1alpha1.PostVMStop, requiring(map[string]string{"tier": "silver"}), NodeContext{}); err != nil {
		t.Errorf("PostVMStop of a VMI whose requirements are unmet: %v", err)
	}
	// Once every required Plugin is there, Ready and selecting, it starts.
	src.set(storeSnapshot(enc, readyPlugin(plugin("audit", ""))))
	if err := d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, requiring(map[string]string{"tier": "gold"}), NodeContext{}); err != nil {
		t.Errorf("PreVMStart with every required Plugin satisfied: %v", err)
	}
	// With the feature gate off nothing runs: a required Plugin is missing.
	src.set(storeSnapshot())
	src.snap.Enabled = false
	if err := d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, requiring(nil), NodeContext{}); err == nil || !strings.Contains(err.Error(), "feature gate is off") {
		t.Errorf("PreVMStart with the gate off: %v, want the required Plugins missing", err)
	}
}
