// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"testing"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/handler-runtime/store"
)

// TestNoSelectedHookBuildsNothing: a dispatch that no node hook is
// selected for (the Plugins have none at this hook point) builds nothing
// the hooks would need: no CEL environment, no connection. New and
// Dispatch allocate a few hundred times (the metric vectors); a CEL
// environment allocates thousands of times. Time and memory in a fresh
// process are measured by tests/coldstart.
func TestNoSelectedHookBuildsNothing(t *testing.T) {
	src := &staticPlugins{snap: store.Snapshot{Enabled: true, Revision: 1, Plugins: []*pluginv1alpha1.Plugin{
		plugin("stop-recorder", `vmi.Labels["record"] == "yes"`, nodeHook("/var/run/kubevirt/stop-recorder/hook.sock", pluginv1alpha1.PostVMStop)),
	}}}
	ctx := t.Context()
	allocs := testing.AllocsPerRun(5, func() {
		d, err := New(Options{Plugins: src})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Dispatch(ctx, pluginv1alpha1.PreVMStart, vmi("vm", nil), NodeContext{NodeName: "node-1"}); err != nil {
			t.Fatal(err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 400 {
		t.Fatalf("New and a dispatch selecting no hook allocated %.0f times, want at most 400", allocs)
	}
}
