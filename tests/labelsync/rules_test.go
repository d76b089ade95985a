// SPDX-License-Identifier: Apache-2.0

package labelsync

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt-plugins/framework/label-syncer/syncer"
	"github.com/kubevirt-plugins/framework/label-syncer/syncmetrics"
	"github.com/kubevirt-plugins/framework/tests/framework/poll"
)

func TestExactKeyEntriesSyncOnlyThoseKeys(t *testing.T) {
	ns := newNamespace(t)
	r := startVM(t, ns, "vm-exact", map[string]string{"ops.example.com/owner": "team-a"}, nil, outside)
	startSyncer(t, nil, syncer.Options{Labels: mustFilter(t, "ops.example.com/owner,ops.example.com/vm-id")}, ns)

	patchTemplate(t, r.vm, map[string]any{
		"ops.example.com/owner":   "team-a-v2",
		"ops.example.com/vm-id":   "vm-1",
		"ops.example.com/owner-b": "not-listed",
	}, nil)
	poll.Until(t, "listed keys on the VMI and the Pod", waitTimeout, func() error {
		return bothHave(t, r, map[string]string{"ops.example.com/owner": "team-a-v2", "ops.example.com/vm-id": "vm-1"})
	})
	if err := bothHave(t, r, map[string]string{"ops.example.com/owner-b": ""}); err != nil {
		t.Errorf("a key no entry lists was synced: %v", err)
	}
	checkOutsideAndUID(t, r, r.pod.UID)

	patchTemplate(t, r.vm, map[string]any{"ops.example.com/vm-id": nil}, nil)
	poll.Until(t, "deleted listed key gone from the VMI and the Pod", waitTimeout, func() error {
		return bothHave(t, r, map[string]string{"ops.example.com/vm-id": "", "ops.example.com/owner": "team-a-v2"})
	})
}

func TestAnnotationsSyncLikeLabels(t *testing.T) {
	ns := newNamespace(t)
	annotations := map[string]string{"notes.example.com/ticket": "T-1", "unsynced.example.com/a": "1"}
	r := startVM(t, ns, "vm-annotations", map[string]string{"ops.example.com/owner": "team-a"}, annotations, outside)
	run := startSyncer(t, nil, syncer.Options{
		Labels:      mustFilter(t, "ops.example.com/*"),
		Annotations: mustFilter(t, "notes.example.com/*,ops.example.com/contact"),
	}, ns)

	// Labels and annotations change together: still one patch per object.
	patchTemplate(t, r.vm,
		map[string]any{"ops.example.com/owner": "team-b"},
		map[string]any{"notes.example.com/ticket": "T-2", "notes.example.com/added": "yes", "ops.example.com/contact": "ops@example.com", "unsynced.example.com/a": "2"})
	wantAnn := map[string]string{"notes.example.com/ticket": "T-2", "notes.example.com/added": "yes", "ops.example.com/contact": "ops@example.com", "unsynced.example.com/a": "1"}
	poll.Until(t, "annotations on the VMI and the Pod", waitTimeout, func() error {
		return bothHaveAnnotations(t, r, wantAnn)
	})
	poll.Until(t, "label on the VMI and the Pod", waitTimeout, func() error {
		return bothHave(t, r, map[string]string{"ops.example.com/owner": "team-b"})
	})
	for _, target := range []string{syncmetrics.TargetVMI, syncmetrics.TargetPod} {
		if got := run.counter(t, syncmetrics.MetricPatches, map[string]string{"target": target}); got != 1 {
			t.Errorf("%s patches = %v, want 1 (labels and annotations in one patch)", target, got)
		}
	}

	patchTemplate(t, r.vm, nil, map[string]any{"notes.example.com/added": nil})
	poll.Until(t, "deleted annotation gone from the VMI and the Pod", waitTimeout, func() error {
		return bothHaveAnnotations(t, r, map[string]string{"notes.example.com/added": "", "notes.example.com/ticket": "T-2", "unsynced.example.com/a": "1"})
	})
	checkOutsideAndUID(t, r, r.pod.UID)
}

func bothHaveAnnotations(t testing.TB, r running, w map[string]string) error {
	_, vmiAnn, _ := current(t, r.vmi)
	if err := want("VMI "+r.vmi.Name+" annotations", vmiAnn, w); err != nil {
		return err
	}
	_, podAnn, _ := current(t, r.pod)
	return want("Pod "+r.pod.Name+" annotations", podAnn, w)
}

// TestConcurrentWriterOnTheVMIKeepsBothSidesKeys runs another client that
// keeps adding unrelated labels to the VMI while the syncer patches it:
// the syncer's JSON patch tests the map it replaces, so neither side's
// keys may be lost.
func TestConcurrentWriterOnTheVMIKeepsBothSidesKeys(t *testing.T) {
	ns := newNamespace(t)
	r := startVM(t, ns, "vm-concurrent", map[string]string{"ops.example.com/gen": "0"}, nil, nil)
	run := startSyncer(t, nil, syncer.Options{Labels: mustFilter(t, "ops.example.com/*")}, ns)

	ctx, stopWriter := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	written := make(chan int, 1)
	// The writer patches its own copy: Patch decodes the answer into it.
	writerVMI := r.vmi.DeepCopy()
	wg.Go(func() {
		n := 0
		defer func() { written <- n }()
		for ctx.Err() == nil {
			if err := mergeLabels(ctx, writerVMI, map[string]any{fmt.Sprintf("writer.example.com/k-%d", n): "v"}); err != nil {
				if ctx.Err() == nil {
					t.Errorf("writer: %v", err)
				}
				return
			}
			n++
		}
	})
	const generations = 20
	for g := 1; g <= generations; g++ {
		gen := fmt.Sprint(g)
		patchTemplate(t, r.vm, map[string]any{"ops.example.com/gen": gen, fmt.Sprintf("ops.example.com/step-%d", g): "x"}, nil)
		poll.Until(t, "generation "+gen+" on the VMI", waitTimeout, func() error {
			labels, _, _ := current(t, r.vmi)
			return want("VMI", labels, map[string]string{"ops.example.com/gen": gen})
		})
	}
	stopWriter()
	wg.Wait()
	n := <-written
	if n == 0 {
		t.Fatal("the writer wrote nothing")
	}

	w := map[string]string{"ops.example.com/gen": fmt.Sprint(generations)}
	for g := 1; g <= generations; g++ {
		w[fmt.Sprintf("ops.example.com/step-%d", g)] = "x"
	}
	for i := range n {
		w[fmt.Sprintf("writer.example.com/k-%d", i)] = "v"
	}
	labels, _, _ := current(t, r.vmi)
	if err := want("VMI", labels, w); err != nil {
		t.Fatalf("a key was lost: %v", err)
	}
	poll.Until(t, "synced keys on the Pod", waitTimeout, func() error {
		podLabels, _, _ := current(t, r.pod)
		return want("Pod", podLabels, map[string]string{"ops.example.com/gen": fmt.Sprint(generations), "ops.example.com/step-1": "x", "writer.example.com/k-0": ""})
	})
	t.Logf("writer added %d labels; the syncer retried %v VMI patches after a failed test",
		n, run.counter(t, syncmetrics.MetricPatchConflicts, map[string]string{"target": syncmetrics.TargetVMI}))
}

// TestHandEditsOnTargetsArePutBack: sync is one way; a synced key edited or
// added by hand on the VMI or the Pod is put back from the source.
func TestHandEditsOnTargetsArePutBack(t *testing.T) {
	ns := newNamespace(t)
	r := startVM(t, ns, "vm-oneway", map[string]string{"ops.example.com/owner": "team-a"}, nil, outside)
	startSyncer(t, nil, syncer.Options{Labels: mustFilter(t, "ops.example.com/*")}, ns)

	for _, target := range []struct {
		name string
		obj  client.Object
	}{{"VMI", r.vmi}, {"Pod", r.pod}} {
		if err := mergeLabels(t.Context(), target.obj, map[string]any{"ops.example.com/owner": "by-hand", "ops.example.com/extra": "by-hand"}); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, "hand edits on the "+target.name+" undone", waitTimeout, func() error {
			return bothHave(t, r, map[string]string{"ops.example.com/owner": "team-a", "ops.example.com/extra": ""})
		})
	}
	labels, _ := templateOf(t, r)
	if labels["ops.example.com/owner"] != "team-a" || labels["ops.example.com/extra"] != "" {
		t.Fatalf("a target's labels flowed back to the template: %v", labels)
	}
}

// TestOnlyLauncherPodsWithLabelAndControllerReferenceAreSynced: a Pod is
// a launcher Pod of the VMI only with both kubevirt.io/created-by=<UID>
// and a controller reference to the VMI; during a migration both the
// source and the target Pod are.
func TestOnlyLauncherPodsWithLabelAndControllerReferenceAreSynced(t *testing.T) {
	ns := newNamespace(t)
	r := startVM(t, ns, "vm-pods", map[string]string{"ops.example.com/owner": "team-a"}, nil, nil)
	ctx := t.Context()

	target := launcherPodObject(r.vmi, nil, nil) // migration target Pod
	labelOnly := launcherPodObject(r.vmi, nil, nil)
	labelOnly.OwnerReferences = nil
	ownerOnly := launcherPodObject(r.vmi, nil, nil)
	delete(ownerOnly.Labels, "kubevirt.io/created-by")
	notController := launcherPodObject(r.vmi, nil, nil)
	notController.OwnerReferences[0].Controller = new(false)
	for _, p := range []client.Object{target, labelOnly, ownerOnly, notController} {
		if err := server.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	startSyncer(t, nil, syncer.Options{Labels: mustFilter(t, "ops.example.com/*")}, ns)
	patchTemplate(t, r.vm, map[string]any{"ops.example.com/owner": "team-b"}, nil)
	poll.Until(t, "both launcher Pods synced", waitTimeout, func() error {
		for _, p := range []client.Object{r.pod, target} {
			labels, _, _ := current(t, p)
			if err := want("Pod "+p.GetName(), labels, map[string]string{"ops.example.com/owner": "team-b"}); err != nil {
				return err
			}
		}
		return nil
	})
	for _, p := range []client.Object{labelOnly, ownerOnly, notController} {
		labels, _, _ := current(t, p)
		if err := want("Pod "+p.GetName(), labels, map[string]string{"ops.example.com/owner": ""}); err != nil {
			t.Errorf("a Pod that is not a launcher Pod of the VMI was synced: %v", err)
		}
	}
}
