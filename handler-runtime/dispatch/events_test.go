// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/handler-runtime/store"
)

// drain returns the Events the fake recorder holds.
func drain(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// TestFailedNodeHookWritesOneWarningEventPerVMIAndPluginPerInterval: a
// node hook failing at every dispatch of 250 VMIs, against a real gRPC
// server that fails, writes one Warning Event per VMI and plugin per
// interval, naming plugin, hook point and error; once the interval is
// over the next failure writes one more, counting those in between.
func TestFailedNodeHookWritesOneWarningEventPerVMIAndPluginPerInterval(t *testing.T) {
	const vmis, rounds = 250, 4
	root := socketRoot(t)
	sock := serve(t, root, &hookServer{name: "flaky", journal: &journal{}, fail: codes.Unavailable})
	hook := nodeHook(sock, pluginv1alpha1.PreVMStart, pluginv1alpha1.PostVMStart)
	hook.FailureStrategy = pluginv1alpha1.Ignore
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rec := record.NewFakeRecorder(vmis * rounds * 2)
	d, err := New(Options{
		Plugins:       &staticPlugins{snap: storeSnapshot(plugin("flaky", "", hook))},
		SocketRoots:   []string{root},
		EventRecorder: rec, Clock: clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })

	dispatchAll := func() {
		for range rounds {
			for i := range vmis {
				for _, point := range []pluginv1alpha1.NodeHookPoint{pluginv1alpha1.PreVMStart, pluginv1alpha1.PostVMStart} {
					if err := d.Dispatch(t.Context(), point, vmi(fmt.Sprintf("vm-%d", i), nil), NodeContext{NodeName: "node-1"}); err != nil {
						t.Fatalf("dispatch under Ignore: %v", err)
					}
				}
			}
		}
	}
	dispatchAll()
	events := drain(rec)
	if len(events) != vmis {
		t.Fatalf("%d Events for %d failures on %d VMIs, want one per VMI", len(events), vmis*rounds*2, vmis)
	}
	for _, want := range []string{"Warning " + ReasonNodeHookFailureIgnored + " ", `plugin "flaky" node hook #0`, "at PreVMStart", "Unavailable", "failing on purpose", "failureStrategy Ignore"} {
		if !strings.Contains(events[0], want) {
			t.Errorf("Event %q does not contain %q", events[0], want)
		}
	}

	clk.SetTime(clk.Now().Add(DefaultEventInterval - time.Second))
	dispatchAll()
	if got := drain(rec); len(got) != 0 {
		t.Fatalf("%d Events within the interval, want none: %q", len(got), got[0])
	}
	clk.SetTime(clk.Now().Add(time.Second))
	if err := d.Dispatch(t.Context(), pluginv1alpha1.PostVMStart, vmi("vm-0", nil), NodeContext{NodeName: "node-1"}); err != nil {
		t.Fatal(err)
	}
	got := drain(rec)
	if want := fmt.Sprintf("%d more failures of plugin %q for this VMI since the last Event", 2*rounds*2-1, "flaky"); len(got) != 1 || !strings.Contains(got[0], want) || !strings.Contains(got[0], "PostVMStart") {
		t.Errorf("Events after the interval %q, want one saying %q about PostVMStart", got, want)
	}
}

// A failure under Fail has its own reason and says the dispatch fails; so
// does a plugin condition that cannot be evaluated. Each plugin has its
// own Events for the same VMI.
func TestFailedNodeHookEventSaysWhetherTheDispatchFailed(t *testing.T) {
	root := socketRoot(t)
	sock := serve(t, root, &hookServer{name: "strict", journal: &journal{}, fail: codes.Internal})
	rec := record.NewFakeRecorder(10)
	d, err := New(Options{
		Plugins: &staticPlugins{snap: storeSnapshot(
			plugin("a-broken-condition", `vmi.Labels["x"] == "y"`, nodeHook(sock, pluginv1alpha1.PreVMStart)),
			plugin("b-strict", "", nodeHook(sock, pluginv1alpha1.PreVMStart)))},
		SocketRoots:   []string{root},
		EventRecorder: rec,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if err := d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi("vm-1", nil), NodeContext{}); err == nil {
		t.Fatal("dispatch with a failing condition succeeded")
	}
	if err := d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi("vm-1", map[string]string{"x": "z"}), NodeContext{}); err == nil {
		t.Fatal("dispatch with a failing hook under Fail succeeded")
	}
	events := drain(rec)
	if len(events) != 2 {
		t.Fatalf("Events %q, want one per plugin", events)
	}
	for i, want := range [][]string{
		{"Warning " + ReasonNodeHookFailed + " ", `plugin "a-broken-condition"`, "plugin condition", "failureStrategy Fail: the VMI's PreVMStart fails"},
		{"Warning " + ReasonNodeHookFailed + " ", `plugin "b-strict" node hook #0`, "Internal", "failureStrategy Fail: the VMI's PreVMStart fails"},
	} {
		for _, w := range want {
			if !strings.Contains(events[i], w) {
				t.Errorf("Event %q does not contain %q", events[i], w)
			}
		}
	}
}

func storeSnapshot(plugins ...*pluginv1alpha1.Plugin) store.Snapshot {
	return store.Snapshot{Plugins: plugins, Enabled: true, Revision: 1}
}
