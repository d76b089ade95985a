// SPDX-License-Identifier: Apache-2.0

package handler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/handler-runtime/dispatch"
	"github.com/kubevirt-plugins/framework/tests/framework/poll"
)

// eventRecorder records Events to the API server as virt-handler's does,
// with the scheme that knows VMIs.
func eventRecorder(t *testing.T) record.EventRecorder {
	t.Helper()
	cs, err := kubernetes.NewForConfig(server.Config)
	if err != nil {
		t.Fatal(err)
	}
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	t.Cleanup(b.Shutdown)
	return b.NewRecorder(server.Scheme, corev1.EventSource{Component: "virt-handler", Host: "node-1"})
}

// vmiEvents lists the Events whose involved object is the VMI.
func vmiEvents(t *testing.T, uid string) []corev1.Event {
	t.Helper()
	var list corev1.EventList
	if err := server.Client.List(t.Context(), &list, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if string(e.InvolvedObject.UID) == uid {
			out = append(out, e)
		}
	}
	return out
}

// TestFailedNodeHookWritesAWarningEventOnTheVMI: node hooks failing at
// every dispatch, served by the real recorder told to fail, write Warning
// Events on the VMI in the API server: one per plugin, saying whether the
// dispatch failed or went on, naming plugin, hook point and error, and no
// more for the failures that follow within the interval (each Event once:
// count 1, not aggregated by the recorder).
func TestFailedNodeHookWritesAWarningEventOnTheVMI(t *testing.T) {
	rec := startRecorder(t, "events", "hook.sock", "events", "--fail-hook-points", "PreVMStart,PostVMStart")
	flaky := nodeHook(rec.Socket, pluginv1alpha1.PreVMStart, pluginv1alpha1.PostVMStart)
	flaky.FailureStrategy = pluginv1alpha1.Ignore
	createPlugins(t, newPlugin("events-flaky", "", flaky), newPlugin("events-strict", "", nodeHook(rec.Socket, pluginv1alpha1.PreVMStart)))
	vmi := newVMI("events-vm", nil)
	vmi.UID = ""
	if err := server.Client.Create(t.Context(), vmi); err != nil {
		t.Fatalf("creating VMI: %v", err)
	}
	t.Cleanup(func() {
		// A cleanup: the test's context is already done. The VMI has no
		// finalizer, so a later run of the test (go test -count) can create
		// it again at once.
		if err := server.Client.Delete(context.WithoutCancel(t.Context()), vmi); err != nil {
			t.Errorf("deleting VMI %s: %v", vmi.Name, err)
		}
	})
	recorder := eventRecorder(t)
	d, err := dispatch.New(dispatch.Options{Plugins: plugins, SocketRoots: []string{socketRoot}, EventRecorder: recorder})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })

	for range 5 {
		if err := d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi, dispatch.NodeContext{NodeName: "node-1"}); err == nil {
			t.Fatal("PreVMStart with a failing Fail hook succeeded")
		}
		if err := d.Dispatch(t.Context(), pluginv1alpha1.PostVMStart, vmi, dispatch.NodeContext{NodeName: "node-1"}); err != nil {
			t.Fatalf("PostVMStart with a failing Ignore hook: %v", err)
		}
	}
	if n := len(readEvents(t, rec.Events)); n != 15 {
		t.Fatalf("the recorder saw %d calls, want 15 (the hooks did fail 15 times)", n)
	}
	// The recorder writes in order: once this one is in, the others are.
	recorder.Event(vmi, corev1.EventTypeNormal, "TestDone", "end of the test's dispatches")
	var events []corev1.Event
	poll.Until(t, "the Events on the VMI", pollTimeout, func() error {
		events = vmiEvents(t, string(vmi.UID))
		if !slices.ContainsFunc(events, func(e corev1.Event) bool { return e.Reason == "TestDone" }) {
			return errors.New("the TestDone Event is not there yet")
		}
		return nil
	})
	var warnings []corev1.Event
	for _, e := range events {
		if e.Type == corev1.EventTypeWarning {
			warnings = append(warnings, e)
		}
	}
	if len(warnings) != 2 {
		t.Fatalf("Warning Events on the VMI: %v, want one per plugin", describe(warnings))
	}
	want := map[string][]string{
		dispatch.ReasonNodeHookFailureIgnored: {`plugin "events-flaky"`, "PreVMStart", "on purpose", "failureStrategy Ignore"},
		dispatch.ReasonNodeHookFailed:         {`plugin "events-strict"`, "PreVMStart", "on purpose", "failureStrategy Fail"},
	}
	for _, e := range warnings {
		parts, ok := want[e.Reason]
		if !ok {
			t.Errorf("unexpected Event reason %s: %s", e.Reason, e.Message)
			continue
		}
		for _, p := range parts {
			if !strings.Contains(e.Message, p) {
				t.Errorf("%s Event %q does not name %q", e.Reason, e.Message, p)
			}
		}
		if e.Count != 1 || e.InvolvedObject.Kind != "VirtualMachineInstance" || e.InvolvedObject.Name != vmi.Name {
			t.Errorf("%s Event count %d on %s %s, want once on VirtualMachineInstance %s", e.Reason, e.Count, e.InvolvedObject.Kind, e.InvolvedObject.Name, vmi.Name)
		}
	}
}

func describe(events []corev1.Event) string {
	var parts []string
	for _, e := range events {
		parts = append(parts, fmt.Sprintf("%s x%d: %s", e.Reason, e.Count, e.Message))
	}
	return strings.Join(parts, "; ")
}
