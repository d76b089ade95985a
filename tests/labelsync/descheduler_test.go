// SPDX-License-Identifier: Apache-2.0

package labelsync

import (
	"testing"

	"github.com/kubevirt-plugins/framework/label-syncer/syncer"
	"github.com/kubevirt-plugins/framework/tests/framework/poll"
)

// The descheduler's eviction annotations, spelled as virt-controller
// (pkg/virt-controller/watch/descheduler) and the descheduler spell them.
const (
	preferNoEviction = "descheduler.alpha.kubernetes.io/prefer-no-eviction"
	evict            = "descheduler.alpha.kubernetes.io/evict"
)

// TestDeschedulerAnnotationsFollowTheTemplateWithoutAnEntry: as
// virt-controller does, both annotations follow the VM template to the VMI
// and on to the launcher Pod, set, changed and removed, although no
// annotation entry is configured.
func TestDeschedulerAnnotationsFollowTheTemplateWithoutAnEntry(t *testing.T) {
	ns := newNamespace(t)
	r := startVM(t, ns, "vm-desched", map[string]string{"ops.example.com/owner": "team-a"}, nil, outside)
	_, _, podUID := current(t, r.pod)
	startSyncer(t, nil, syncer.Options{Labels: mustFilter(t, "ops.example.com/*")}, ns)

	patchTemplate(t, r.vm, nil, map[string]any{preferNoEviction: "true", "unsynced.example.com/a": "1"})
	poll.Until(t, "prefer-no-eviction on the VMI and the Pod", waitTimeout, func() error {
		return bothHaveAnnotations(t, r, map[string]string{preferNoEviction: "true", "unsynced.example.com/a": ""})
	})
	// Opt the VM in to eviction instead: one annotation replaces the other.
	patchTemplate(t, r.vm, nil, map[string]any{preferNoEviction: nil, evict: "true"})
	poll.Until(t, "evict replaces prefer-no-eviction on the VMI and the Pod", waitTimeout, func() error {
		return bothHaveAnnotations(t, r, map[string]string{preferNoEviction: "", evict: "true"})
	})
	patchTemplate(t, r.vm, nil, map[string]any{evict: nil})
	poll.Until(t, "evict removed from the VMI and the Pod", waitTimeout, func() error {
		return bothHaveAnnotations(t, r, map[string]string{evict: "", preferNoEviction: ""})
	})
	checkOutsideAndUID(t, r, podUID)
}

// TestDeschedulerAnnotationsStayPutWhenTurnedOff: with the built-in sync
// turned off (--sync-descheduler-annotations=false) the annotations are
// left to others, while configured keys still sync.
func TestDeschedulerAnnotationsStayPutWhenTurnedOff(t *testing.T) {
	ns := newNamespace(t)
	r := startVM(t, ns, "vm-desched-off", map[string]string{"ops.example.com/owner": "team-a"}, map[string]string{evict: "true"}, outside)
	startSyncer(t, nil, syncer.Options{Labels: mustFilter(t, "ops.example.com/*"), NoDeschedulerSync: true}, ns)

	// The label change is the witness that the syncer handled this
	// template change: it travels in the same reconcile as the annotations.
	patchTemplate(t, r.vm, map[string]any{"ops.example.com/owner": "team-b"}, map[string]any{evict: nil, preferNoEviction: "true"})
	poll.Until(t, "the configured label synced", waitTimeout, func() error {
		return bothHave(t, r, map[string]string{"ops.example.com/owner": "team-b"})
	})
	if err := bothHaveAnnotations(t, r, map[string]string{evict: "true", preferNoEviction: ""}); err != nil {
		t.Fatalf("descheduler annotations synced although turned off: %v", err)
	}
}
