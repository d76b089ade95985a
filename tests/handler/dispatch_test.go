// SPDX-License-Identifier: Apache-2.0

package handler

import (
	"errors"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/handler-runtime/dispatch"
	hookrecorder "github.com/kubevirt-plugins/framework/sample-sidecars/node-hook-recorder/recorder"
	"github.com/kubevirt-plugins/framework/tests/framework/poll"
)

func TestEachNodeHookPointReachesTheServerWithVMIAndNodeName(t *testing.T) {
	rec := startRecorder(t, "points", "hook.sock", "points")
	createPlugins(t, newPlugin("every-point", "", nodeHook(rec.Socket, pluginv1alpha1.NodeHookPoints...)))

	vmi := newVMI("vm-points", nil)
	for _, point := range pluginv1alpha1.NodeHookPoints {
		if err := dispatcher.Dispatch(t.Context(), point, vmi, dispatch.NodeContext{NodeName: "node-a"}); err != nil {
			t.Fatalf("%s: %v", point, err)
		}
	}
	events := readEvents(t, rec.Events)
	if len(events) != len(pluginv1alpha1.NodeHookPoints) {
		t.Fatalf("recorder has %d events, want %d: %+v", len(events), len(pluginv1alpha1.NodeHookPoints), events)
	}
	for i, point := range pluginv1alpha1.NodeHookPoints {
		want := hookrecorder.Event{Seq: uint64(i + 1), HookPoint: string(point), Namespace: "default", Name: "vm-points", UID: "uid-vm-points", Node: "node-a"}
		if events[i] != want {
			t.Errorf("event %d = %+v, want %+v", i, events[i], want)
		}
	}
}

func TestPluginsAreCalledInAlphabeticalOrder(t *testing.T) {
	// Two recorders append to one shared events file, so its line order is
	// the order in which the calls arrived. The recorder of "alpha" answers
	// PreVMStart with an error (its hook ignores that), which marks its
	// line; "bravo" is created first so that creation order is not what
	// the dispatcher follows.
	bravoRec := startRecorder(t, "order-b", "hook.sock", "order")
	alphaRec := startRecorder(t, "order-a", "hook.sock", "order", "--fail-hook-points", "PreVMStart")
	alphaHook := nodeHook(alphaRec.Socket, pluginv1alpha1.PreVMStart)
	alphaHook.FailureStrategy = pluginv1alpha1.Ignore
	createPlugins(t,
		newPlugin("bravo", "", nodeHook(bravoRec.Socket, pluginv1alpha1.PreVMStart)),
		newPlugin("alpha", "", alphaHook),
	)

	for _, name := range []string{"vm-1", "vm-2"} {
		if err := dispatcher.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, newVMI(name, nil), dispatch.NodeContext{NodeName: "n"}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	events := readEvents(t, alphaRec.Events)
	var got []string
	for _, e := range events {
		who := "bravo"
		if e.Failed {
			who = "alpha"
		}
		got = append(got, e.Name+":"+who)
	}
	want := []string{"vm-1:alpha", "vm-1:bravo", "vm-2:alpha", "vm-2:bravo"}
	if len(got) != len(want) {
		t.Fatalf("shared record = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("shared record = %v, want %v", got, want)
		}
	}
}

func TestLabelConditionSelectsOneVMIAndSkipsAnother(t *testing.T) {
	rec := startRecorder(t, "labels", "hook.sock", "labels")
	h := nodeHook(rec.Socket, pluginv1alpha1.PreVMStart)
	h.Condition = `vmi.Labels["tier"] == "gold"`
	createPlugins(t, newPlugin("tiered", `"tier" in vmi.Labels`, h))

	for _, vmi := range []struct {
		name   string
		labels map[string]string
	}{
		{"vm-gold", map[string]string{"tier": "gold"}},
		{"vm-silver", map[string]string{"tier": "silver"}},
		{"vm-plain", nil},
	} {
		if err := dispatcher.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, newVMI(vmi.name, vmi.labels), dispatch.NodeContext{NodeName: "n"}); err != nil {
			t.Fatalf("%s: %v", vmi.name, err)
		}
	}
	events := readEvents(t, rec.Events)
	if len(events) != 1 || events[0].Name != "vm-gold" {
		t.Fatalf("recorded %+v, want only vm-gold", events)
	}
}

func TestServerDownFailsWithFailAndSucceedsWithIgnore(t *testing.T) {
	rec := startRecorder(t, "down", "hook.sock", "down")
	failHook := nodeHook(rec.Socket, pluginv1alpha1.PreVMStart)
	ignoreHook := nodeHook(rec.Socket, pluginv1alpha1.PostVMStart)
	ignoreHook.FailureStrategy = pluginv1alpha1.Ignore
	createPlugins(t, newPlugin("downstream", "", failHook, ignoreHook))
	vmi := newVMI("vm-down", nil)

	// Reached once while up, so that the pool holds a connection that the
	// stop then breaks.
	if err := dispatcher.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi, dispatch.NodeContext{}); err != nil {
		t.Fatal(err)
	}
	rec.stop(t)

	err := dispatcher.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi, dispatch.NodeContext{})
	var herr *dispatch.HookError
	if !errors.As(err, &herr) || herr.Plugin != "downstream" || herr.HookIndex != 0 || herr.HookPoint != pluginv1alpha1.PreVMStart {
		t.Fatalf("Fail hook with the server down: Dispatch = %v, want a HookError naming downstream, hook 0, PreVMStart", err)
	}
	if err := dispatcher.Dispatch(t.Context(), pluginv1alpha1.PostVMStart, vmi, dispatch.NodeContext{}); err != nil {
		t.Fatalf("Ignore hook with the server down: Dispatch = %v, want success", err)
	}
}

func TestHookPastItsTimeoutIsCutOff(t *testing.T) {
	rec := startRecorder(t, "slowpoke", "hook.sock", "slowpoke", "--delay", "10m")
	h := nodeHook(rec.Socket, pluginv1alpha1.PreVMStart)
	h.Timeout = &metav1.Duration{Duration: time.Second}
	createPlugins(t, newPlugin("slowpoke", "", h))

	err := dispatcher.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, newVMI("vm-timeout", nil), dispatch.NodeContext{})
	if !errors.Is(err, dispatch.ErrHookTimeout) {
		t.Fatalf("Dispatch = %v, want ErrHookTimeout", err)
	}
	if events := readEvents(t, rec.Events); len(events) != 1 {
		t.Fatalf("recorder has %d events, want the one call that was cut off", len(events))
	}
}

func TestPluginEditedInTheAPIServerChangesTheNextDispatch(t *testing.T) {
	rec := startRecorder(t, "edit", "hook.sock", "edit")
	p := newPlugin("editable", "", nodeHook(rec.Socket, pluginv1alpha1.PreVMStart))
	createPlugins(t, p)
	vmi := newVMI("vm-edit", nil)

	if err := dispatcher.Dispatch(t.Context(), pluginv1alpha1.PostVMStart, vmi, dispatch.NodeContext{}); err != nil {
		t.Fatal(err)
	}
	if n := len(readEvents(t, rec.Events)); n != 0 {
		t.Fatalf("%d events before the edit, PostVMStart is not permitted yet", n)
	}

	p.Spec.NodeHooks[0].PermittedHooks = append(p.Spec.NodeHooks[0].PermittedHooks, pluginv1alpha1.PostVMStart)
	if err := server.Client.Update(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	waitForStore(t, p)

	if err := dispatcher.Dispatch(t.Context(), pluginv1alpha1.PostVMStart, vmi, dispatch.NodeContext{}); err != nil {
		t.Fatal(err)
	}
	events := readEvents(t, rec.Events)
	if len(events) != 1 || events[0].HookPoint != string(pluginv1alpha1.PostVMStart) {
		t.Fatalf("events after the edit = %+v, want one PostVMStart", events)
	}
}

func TestFeatureGateOffDispatchesNothing(t *testing.T) {
	rec := startRecorder(t, "gate", "hook.sock", "gate")
	createPlugins(t, newPlugin("gated", "", nodeHook(rec.Socket, pluginv1alpha1.NodeHookPoints...)))
	pluginsGate.Store(false)
	t.Cleanup(func() { pluginsGate.Store(true) })

	for _, point := range pluginv1alpha1.NodeHookPoints {
		if err := dispatcher.Dispatch(t.Context(), point, newVMI("vm-gate", nil), dispatch.NodeContext{}); err != nil {
			t.Fatalf("%s: %v", point, err)
		}
	}
	if n := len(readEvents(t, rec.Events)); n != 0 {
		t.Fatalf("%d events with the feature gate off", n)
	}

	// Turned back on at run time, the same store dispatches again.
	pluginsGate.Store(true)
	if err := dispatcher.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, newVMI("vm-gate", nil), dispatch.NodeContext{}); err != nil {
		t.Fatal(err)
	}
	if n := len(readEvents(t, rec.Events)); n != 1 {
		t.Fatalf("%d events with the feature gate back on, want 1", n)
	}
}

// TestOnVMStopDuringPreVMStartReachesTheServerOnlyAfterPreVMStartReturned
// reports OnVMStop while the recorder still works on the same VMI's
// PreVMStart (each call takes 1 s there). Node hooks of one VMI are ordered
// per VMI: the recorder's own clock shows OnVMStop arriving only once the
// PreVMStart call was over.
func TestOnVMStopDuringPreVMStartReachesTheServerOnlyAfterPreVMStartReturned(t *testing.T) {
	const delay = time.Second
	rec := startRecorder(t, "per-vmi", "hook.sock", "per-vmi", "--delay", delay.String())
	createPlugins(t, newPlugin("per-vmi", "", nodeHook(rec.Socket, pluginv1alpha1.PreVMStart, pluginv1alpha1.OnVMStop)))
	vmi := newVMI("vm-per-vmi", nil)

	start := make(chan error, 1)
	go func() {
		start <- dispatcher.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi, dispatch.NodeContext{NodeName: "n"})
	}()
	poll.Until(t, "PreVMStart reaches the recorder", pollTimeout, func() error {
		if n := len(readEvents(t, rec.Events)); n != 1 {
			return fmt.Errorf("%d events recorded", n)
		}
		return nil
	})
	if err := dispatcher.Dispatch(t.Context(), pluginv1alpha1.OnVMStop, vmi, dispatch.NodeContext{NodeName: "n"}); err != nil {
		t.Fatal(err)
	}
	if err := <-start; err != nil {
		t.Fatal(err)
	}
	events, err := hookrecorder.ReadEvents(rec.Events)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 || events[0].HookPoint != "PreVMStart" || events[1].HookPoint != "OnVMStop" {
		t.Fatalf("recorder has %+v, want PreVMStart then OnVMStop", events)
	}
	if gap := events[1].Time.Sub(events[0].Time); gap < delay {
		t.Fatalf("OnVMStop arrived %s after PreVMStart, while PreVMStart's call (%s) still ran", gap, delay)
	}
}
