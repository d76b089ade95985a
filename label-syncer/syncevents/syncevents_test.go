// SPDX-License-Identifier: Apache-2.0

package syncevents

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func vmi(i int) *kubevirtv1.VirtualMachineInstance {
	return &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "vms", Name: fmt.Sprintf("vm-%05d", i)}}
}

// drain returns the events recorded since the last drain.
func drain(rec *events.FakeRecorder) []string {
	out := make([]string, len(rec.Events))
	for i := range out {
		out[i] = <-rec.Events
	}
	return out
}

// TestOneRefusedKeyOnManyVMsRecordsOneEventPerInterval: one misconfigured
// key on 5,000 VMs records one event, and the next interval's event says
// how many objects showed the problem meanwhile.
func TestOneRefusedKeyOnManyVMsRecordsOneEventPerInterval(t *testing.T) {
	rec := events.NewFakeRecorder(10000)
	clk := clocktesting.NewFakePassiveClock(time.Unix(1e9, 0))
	r := New(rec, Options{Clock: clk})
	for i := range 5000 {
		r.KeyRefused(vmi(i), nil, "VirtualMachineInstance", vmi(i).Name, "label", "ops.example.com/bad", "not a valid label value")
	}
	got := drain(rec)
	if len(got) != 1 {
		t.Fatalf("%d events for one key on 5,000 VMs, want 1: %q", len(got), got)
	}
	for _, w := range []string{"Warning", ReasonKeyRefused, "label ops.example.com/bad not synced to VirtualMachineInstance vm-00000", "not a valid label value"} {
		if !strings.Contains(got[0], w) {
			t.Errorf("event %q does not contain %q", got[0], w)
		}
	}

	clk.SetTime(clk.Now().Add(DefaultInterval))
	r.KeyRefused(vmi(0), nil, "VirtualMachineInstance", vmi(0).Name, "label", "ops.example.com/bad", "not a valid label value")
	got = drain(rec)
	if len(got) != 1 || !strings.Contains(got[0], "and on 4999 more objects") {
		t.Fatalf("after an interval: events %q, want one counting the 4999 objects since", got)
	}
}

// TestDistinctProblemsBeyondTheLimitShareOneEvent: with MaxProblems 3, ten
// distinct refused keys record three events of their own and one shared.
func TestDistinctProblemsBeyondTheLimitShareOneEvent(t *testing.T) {
	rec := events.NewFakeRecorder(10000)
	r := New(rec, Options{MaxProblems: 3, Clock: clocktesting.NewFakePassiveClock(time.Unix(1e9, 0))})
	for round := range 3 {
		for k := range 10 {
			r.KeyRefused(vmi(round), nil, "Pod", "virt-launcher-x", "annotation", fmt.Sprintf("notes.example.com/bad %d", k), "not a valid annotation key")
		}
	}
	got := drain(rec)
	if len(got) != 4 || !strings.Contains(got[3], "more than 3 distinct problems") {
		t.Fatalf("events %q, want 3 of their own and 1 shared", got)
	}
}

// TestPatchFailuresAreToldApartByStatusReason: failures of one status reason
// on one kind of target are one problem; another reason or target is
// another.
func TestPatchFailuresAreToldApartByStatusReason(t *testing.T) {
	rec := events.NewFakeRecorder(10000)
	r := New(rec, Options{Clock: clocktesting.NewFakePassiveClock(time.Unix(1e9, 0))})
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "virt-launcher-x", errors.New("denied by a webhook"))
	invalid := apierrors.NewBadRequest("bad")
	for i := range 100 {
		r.PatchFailed(vmi(i), nil, "Pod", forbidden)
		r.PatchFailed(vmi(i), nil, "Pod", invalid)
		r.PatchFailed(vmi(i), nil, "VirtualMachineInstance", forbidden)
		r.PatchFailed(vmi(i), nil, "Pod", errors.New("connection reset"))
	}
	got := drain(rec)
	if len(got) != 4 {
		t.Fatalf("%d events, want 4 (Forbidden and BadRequest on Pods, Forbidden on VMIs, an error without status): %q", len(got), got)
	}
	if !strings.Contains(got[0], ReasonPatchFailed) || !strings.Contains(got[0], "denied by a webhook") {
		t.Fatalf("event %q does not say the patch failed and why", got[0])
	}
}

func TestNilRecorderRecordsNothing(t *testing.T) {
	var r *Recorder
	r.KeyRefused(vmi(0), nil, "Pod", "p", "label", "k", "why")
	r.PatchFailed(vmi(0), nil, "Pod", errors.New("x"))
}
