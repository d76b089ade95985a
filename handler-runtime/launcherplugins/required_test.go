// SPDX-License-Identifier: Apache-2.0

package launcherplugins

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/api/plugin/v1alpha1/required"
	"github.com/kubevirt-plugins/framework/handler-runtime/store"
)

// TestLauncherIsRefusedItsPluginsWhileARequiredOneIsUnmet: the launcher of
// a VMI that requires a Plugin gets nothing while that Plugin is missing,
// not Ready or not selecting it; the error names it and why. The CEL
// environment is built only once a required Plugin's condition is needed.
func TestLauncherIsRefusedItsPluginsWhileARequiredOneIsUnmet(t *testing.T) {
	enc := withLauncherHook("enc")
	enc.Spec.Condition = `"secure" in vmi.Labels`
	enc.Generation = 1
	src := &source{snap: store.Snapshot{Enabled: true, Revision: 1, Plugins: []*pluginv1alpha1.Plugin{enc}}}
	s, err := New(Options{Plugins: src})
	if err != nil {
		t.Fatal(err)
	}
	secure := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "ns",
		Annotations: map[string]string{required.Annotation: "enc"}}}
	refused := func(want string) {
		t.Helper()
		_, err := s.LauncherPlugins(secure)
		if _, ok := errors.AsType[*required.Error](err); !ok || !strings.Contains(err.Error(), want) {
			t.Errorf("LauncherPlugins: %v, want a refusal saying %q", err, want)
		}
	}
	refused(`plugin "enc" NotReady: it has no Ready condition yet`)
	enc.Status.Conditions = []metav1.Condition{{Type: pluginv1alpha1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: "Ready"}}
	refused(`plugin "enc" NotSelected: its condition "\"secure\" in vmi.Labels" is false for this VMI`)
	secure.Labels = map[string]string{"secure": ""}
	got, err := s.LauncherPlugins(secure)
	if err != nil {
		t.Fatalf("every required Plugin satisfied: %v", err)
	}
	if plugins, err := Decode(got.Data); err != nil || len(plugins) != 1 || plugins[0].Name != "enc" {
		t.Errorf("handed %v (%v), want enc", plugins, err)
	}
	src.snap.Plugins = nil
	refused(`plugin "enc" Missing: no Plugin of that name exists`)
	// A VMI that requires nothing is not affected.
	if _, err := s.LauncherPlugins(vmi); err != nil {
		t.Errorf("VMI without requirements: %v", err)
	}
}
