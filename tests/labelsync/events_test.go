// SPDX-License-Identifier: Apache-2.0

package labelsync

import (
	"context"
	"fmt"
	"strings"
	"testing"

	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt-plugins/framework/label-syncer/syncer"
	"github.com/kubevirt-plugins/framework/label-syncer/syncevents"
	"github.com/kubevirt-plugins/framework/label-syncer/syncmetrics"
	"github.com/kubevirt-plugins/framework/tests/framework/poll"
)

// badValue is a label value no object can take (a space, an exclamation
// mark); a VM template, not validated as metadata is, can hold it.
const badValue = "not a label value!"

// TestRoutineSyncWritesNoEvent: template changes synced to the VMI and the
// Pod write no event, only the two patches; they show in the metrics.
// Events are written in the order they are recorded, so a Warning recorded
// after the syncs (a refused key on another VM) marks the point by which
// any event of the syncs would have been written.
func TestRoutineSyncWritesNoEvent(t *testing.T) {
	ns := newNamespace(t)
	a := startVM(t, ns, "vm-routine", map[string]string{"ops.example.com/owner": "team-a"}, nil, outside)
	marker := startVM(t, ns, "vm-marker", map[string]string{"ops.example.com/owner": "team-m"}, nil, outside)
	run := startSyncer(t, nil, syncer.Options{Labels: mustFilter(t, "ops.example.com/*")}, ns)

	patchTemplate(t, a.vm, map[string]any{"ops.example.com/owner": "team-a-v2", "ops.example.com/tier": "gold"}, nil)
	poll.Until(t, "the change on the VMI and the Pod", waitTimeout, func() error {
		return bothHave(t, a, map[string]string{"ops.example.com/owner": "team-a-v2", "ops.example.com/tier": "gold"})
	})
	patchTemplate(t, a.vm, map[string]any{"ops.example.com/tier": nil}, nil)
	poll.Until(t, "the removal on the VMI and the Pod", waitTimeout, func() error {
		return bothHave(t, a, map[string]string{"ops.example.com/tier": ""})
	})
	if got := run.counter(t, syncmetrics.MetricSyncs, map[string]string{"result": syncmetrics.ResultPatched}); got != 4 {
		t.Errorf("patched syncs = %v, want 4 (two VMI, two Pod)", got)
	}

	patchTemplate(t, marker.vm, map[string]any{"ops.example.com/bad": badValue}, nil)
	poll.Until(t, "the marker's Warning event", waitTimeout, func() error {
		return hasEvents(t.Context(), ns, "vm-marker", syncevents.ReasonKeyRefused+": ops.example.com/bad")
	})
	list := &eventsv1.EventList{}
	if err := server.Client.List(t.Context(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Items {
		if e.Regarding.Name != "vm-marker" {
			t.Errorf("a routine sync wrote an event: %s %s on %s %s: %s", e.Type, e.Reason, e.Regarding.Kind, e.Regarding.Name, e.Note)
		}
	}
}

// TestRefusedKeyOnManyVMsWritesAtMostTheBound: one misconfigured key in the
// templates of many VMs writes one Warning event (the bound is one event per
// problem per syncevents.DefaultInterval), while every VMI and Pod gets the
// template's other keys.
func TestRefusedKeyOnManyVMsWritesAtMostTheBound(t *testing.T) {
	const n = 40
	ns := newNamespace(t)
	vms := make([]running, n)
	for i := range vms {
		vms[i] = startVM(t, ns, fmt.Sprintf("vm-%02d", i), map[string]string{"ops.example.com/owner": "team-a"}, nil, nil)
	}
	run := startSyncer(t, nil, syncer.Options{Labels: mustFilter(t, "ops.example.com/*")}, ns)
	for _, r := range vms {
		patchTemplate(t, r.vm, map[string]any{"ops.example.com/owner": "team-b", "ops.example.com/bad": badValue}, nil)
	}
	for _, r := range vms {
		poll.Until(t, "the valid key on "+r.vm.Name, waitTimeout, func() error {
			return bothHave(t, r, map[string]string{"ops.example.com/owner": "team-b", "ops.example.com/bad": ""})
		})
	}
	poll.Until(t, "every VMI's refusal counted", waitTimeout, func() error {
		if got := run.counter(t, syncmetrics.MetricRefusedKeys, map[string]string{"target": syncmetrics.TargetVMI}); got < n {
			return fmt.Errorf("%v refusals counted, want at least %d", got, n)
		}
		return nil
	})
	// Another problem, recorded after every refusal of the first: once its
	// event is written, every earlier one is.
	patchTemplate(t, vms[0].vm, map[string]any{"ops.example.com/other-bad": badValue}, nil)
	poll.Until(t, "the second problem's event", waitTimeout, func() error {
		return hasEvents(t.Context(), ns, vms[0].vm.Name, syncevents.ReasonKeyRefused+": ops.example.com/other-bad")
	})
	list := &eventsv1.EventList{}
	if err := server.Client.List(t.Context(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var bad []string
	for _, e := range list.Items {
		if e.Type != "Warning" || e.Reason != syncevents.ReasonKeyRefused {
			t.Errorf("unexpected event %s %s: %s", e.Type, e.Reason, e.Note)
		}
		if strings.Contains(e.Note, "ops.example.com/bad ") {
			bad = append(bad, e.Regarding.Name)
		}
	}
	if len(bad) != 1 {
		t.Fatalf("%d events for one refused key on %d VMs (on %v), want 1", len(bad), n, bad)
	}
}

// hasEvents checks that events regarding the VMI include, for each
// "<reason>: <text>", one with that reason whose note contains text.
func hasEvents(ctx context.Context, ns, vmiName string, wants ...string) error {
	list := &eventsv1.EventList{}
	if err := server.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		return err
	}
	var seen []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "VirtualMachineInstance" && e.Regarding.Name == vmiName {
			seen = append(seen, e.Reason+": "+e.Note)
		}
	}
next:
	for _, w := range wants {
		reason, text, _ := strings.Cut(w, ": ")
		for _, s := range seen {
			if strings.HasPrefix(s, reason+": ") && strings.Contains(s, text) {
				continue next
			}
		}
		return fmt.Errorf("no event %q among %q", w, seen)
	}
	return nil
}

// TestAnnotationOverTheAPIServersTotalIsRefusedAndTheRestSynced: a VM
// template may hold a 300 KiB annotation (a template is not held to the 256
// KiB the API server allows an object's annotations in total). The syncer
// refuses that key with a Warning naming it and the sizes, and syncs the
// template's other keys to the VMI and the Pod; before, every patch of the
// VMI failed, for ever.
func TestAnnotationOverTheAPIServersTotalIsRefusedAndTheRestSynced(t *testing.T) {
	ns := newNamespace(t)
	r := startVM(t, ns, "vm-huge-note", map[string]string{"ops.example.com/owner": "team-a"}, nil, outside)
	startSyncer(t, nil, syncer.Options{Labels: mustFilter(t, "ops.example.com/*"), Annotations: mustFilter(t, "notes.example.com/*")}, ns)

	patchTemplate(t, r.vm, map[string]any{"ops.example.com/owner": "team-b"},
		map[string]any{"notes.example.com/huge": strings.Repeat("h", 300<<10), "notes.example.com/ticket": "T-1"})
	poll.Until(t, "the other keys on the VMI and the Pod", waitTimeout, func() error {
		if err := bothHave(t, r, map[string]string{"ops.example.com/owner": "team-b"}); err != nil {
			return err
		}
		return bothHaveAnnotations(t, r, map[string]string{"notes.example.com/ticket": "T-1", "notes.example.com/huge": ""})
	})
	poll.Until(t, "the Warning naming the refused annotation", waitTimeout, func() error {
		return hasEvents(t.Context(), ns, "vm-huge-note", syncevents.ReasonKeyRefused+": notes.example.com/huge")
	})
	list := &eventsv1.EventList{}
	if err := server.Client.List(t.Context(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Items {
		if e.Reason == syncevents.ReasonKeyRefused && !strings.Contains(e.Note, "262144") {
			t.Errorf("Warning %q does not give the API server's limit", e.Note)
		}
		if e.Reason == syncevents.ReasonPatchFailed {
			t.Errorf("a patch failed: %s", e.Note)
		}
	}
}
