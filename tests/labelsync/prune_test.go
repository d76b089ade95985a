// SPDX-License-Identifier: Apache-2.0

package labelsync

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt-plugins/framework/label-syncer/labelsync"
	"github.com/kubevirt-plugins/framework/label-syncer/syncer"
	"github.com/kubevirt-plugins/framework/tests/framework/poll"
)

// TestPruneUnconfiguredRemovesOnlyKeysItSynced: the syncer records what it
// synced; after ops.example.com/* is dropped from the configuration and the
// syncer restarts, the keys it synced under that entry go, a key with the
// same prefix added by hand stays.
func TestPruneUnconfiguredRemovesOnlyKeysItSynced(t *testing.T) {
	ns := newNamespace(t)
	// The VMI and the Pod start without the template's keys: the syncer
	// adds (and so records) them.
	r := startVM(t, ns, "vm-prune", nil, nil, outside)
	patchTemplate(t, r.vm,
		map[string]any{"ops.example.com/owner": "team-a", "team.example.com/tier": "gold"},
		map[string]any{"notes.example.com/ticket": "T-1"})

	first := startSyncer(t, nil, syncer.Options{
		Labels:            mustFilter(t, "ops.example.com/*,team.example.com/*"),
		Annotations:       mustFilter(t, "notes.example.com/*"),
		PruneUnconfigured: true,
	}, ns)
	poll.Until(t, "keys synced and recorded on the VMI and the Pod", waitTimeout, func() error {
		if err := bothHave(t, r, map[string]string{"ops.example.com/owner": "team-a", "team.example.com/tier": "gold"}); err != nil {
			return err
		}
		return bothHaveAnnotations(t, r, map[string]string{
			"notes.example.com/ticket":            "T-1",
			labelsync.SyncedLabelsAnnotation:      "ops.example.com/owner,team.example.com/tier",
			labelsync.SyncedAnnotationsAnnotation: "notes.example.com/ticket",
		})
	})
	first.stop(t)

	// While the syncer is down, someone adds keys by hand under the same
	// prefixes.
	if err := mergeLabels(t.Context(), r.vmi, map[string]any{"ops.example.com/manual": "hand"}); err != nil {
		t.Fatal(err)
	}
	if err := mergeLabels(t.Context(), r.pod, map[string]any{"ops.example.com/manual": "hand"}); err != nil {
		t.Fatal(err)
	}

	// Reconfigured: ops.example.com/* and the annotation entry are gone.
	startSyncer(t, nil, syncer.Options{
		Labels:            mustFilter(t, "team.example.com/*"),
		PruneUnconfigured: true,
	}, ns)
	poll.Until(t, "keys synced under removed entries pruned from the VMI and the Pod", waitTimeout, func() error {
		if err := bothHave(t, r, map[string]string{"ops.example.com/owner": "", "team.example.com/tier": "gold"}); err != nil {
			return err
		}
		return bothHaveAnnotations(t, r, map[string]string{
			"notes.example.com/ticket":            "",
			labelsync.SyncedLabelsAnnotation:      "team.example.com/tier",
			labelsync.SyncedAnnotationsAnnotation: "",
		})
	})
	if err := bothHave(t, r, map[string]string{"ops.example.com/manual": "hand"}); err != nil {
		t.Errorf("a key the syncer never synced was removed: %v", err)
	}
	checkOutsideAndUID(t, r, r.pod.UID)
	// The source is never written.
	labels, annotations := templateOf(t, r)
	if labels["ops.example.com/owner"] != "team-a" || annotations["notes.example.com/ticket"] != "T-1" {
		t.Errorf("VM template changed: labels %v annotations %v", labels, annotations)
	}
}

// TestWithoutPruneReconfigurationLeavesSyncedKeys shows the limit the field
// report describes, which stays the default: without
// --prune-unconfigured, keys synced under a removed entry stay.
func TestWithoutPruneReconfigurationLeavesSyncedKeys(t *testing.T) {
	ns := newNamespace(t)
	r := startVM(t, ns, "vm-noprune", nil, nil, outside)
	patchTemplate(t, r.vm, map[string]any{"ops.example.com/owner": "team-a", "team.example.com/tier": "gold"}, nil)
	first := startSyncer(t, nil, syncer.Options{Labels: mustFilter(t, "ops.example.com/*,team.example.com/*")}, ns)
	poll.Until(t, "keys synced", waitTimeout, func() error {
		return bothHave(t, r, map[string]string{"ops.example.com/owner": "team-a", "team.example.com/tier": "gold"})
	})
	first.stop(t)
	if err := bothHaveAnnotations(t, r, map[string]string{labelsync.SyncedLabelsAnnotation: ""}); err != nil {
		t.Errorf("bookkeeping written with pruning off: %v", err)
	}

	startSyncer(t, nil, syncer.Options{Labels: mustFilter(t, "team.example.com/*")}, ns)
	// A change the second run must carry shows it has processed the VM.
	patchTemplate(t, r.vm, map[string]any{"team.example.com/tier": "silver"}, nil)
	poll.Until(t, "second run synced", waitTimeout, func() error {
		return bothHave(t, r, map[string]string{"team.example.com/tier": "silver"})
	})
	if err := bothHave(t, r, map[string]string{"ops.example.com/owner": "team-a"}); err != nil {
		t.Errorf("key removed without pruning: %v", err)
	}
}

func templateOf(t testing.TB, r running) (labels, annotations map[string]string) {
	t.Helper()
	vm := r.vm.DeepCopy()
	if err := server.Client.Get(t.Context(), client.ObjectKeyFromObject(r.vm), vm); err != nil {
		t.Fatal(err)
	}
	return vm.Spec.Template.ObjectMeta.Labels, vm.Spec.Template.ObjectMeta.Annotations
}
