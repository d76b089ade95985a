package labelsync

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/kubevirt-plugins/framework/label-syncer/pkg/metrics"
	"github.com/kubevirt-plugins/framework/label-syncer/pkg/syncer"
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
	eventually(t, "listed keys on the VMI and the Pod", func() error {
		return bothHave(t, r, map[string]string{"ops.example.com/owner": "team-a-v2", "ops.example.com/vm-id": "vm-1"})
	})
	if err := bothHave(t, r, map[string]string{"ops.example.com/owner-b": ""}); err != nil {
		t.Errorf("a key no entry lists was synced: %v", err)
	}
	checkOutsideAndUID(t, r, r.pod.UID)

	patchTemplate(t, r.vm, map[string]any{"ops.example.com/vm-id": nil}, nil)
	eventually(t, "deleted listed key gone from the VMI and the Pod", func() error {
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
	eventually(t, "annotations on the VMI and the Pod", func() error {
		return bothHaveAnnotations(t, r, wantAnn)
	})
	eventually(t, "label on the VMI and the Pod", func() error {
		return bothHave(t, r, map[string]string{"ops.example.com/owner": "team-b"})
	})
	for _, target := range []string{metrics.TargetVMI, metrics.TargetPod} {
		if got := run.counter(t, "labelsync_patches_total", map[string]string{"target": target}); got != 1 {
			t.Errorf("%s patches = %v, want 1 (labels and annotations in one patch)", target, got)
		}
	}

	patchTemplate(t, r.vm, nil, map[string]any{"notes.example.com/added": nil})
	eventually(t, "deleted annotation gone from the VMI and the Pod", func() error {
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

	ctx, stopWriter := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	written := make(chan int, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		n := 0
		defer func() { written <- n }()
		for ctx.Err() == nil {
			if err := mergeLabels(ctx, r.vmi, map[string]any{fmt.Sprintf("writer.example.com/k-%d", n): "v"}); err != nil {
				if ctx.Err() == nil {
					t.Errorf("writer: %v", err)
				}
				return
			}
			n++
		}
	}()
	const generations = 20
	for g := 1; g <= generations; g++ {
		gen := fmt.Sprint(g)
		patchTemplate(t, r.vm, map[string]any{"ops.example.com/gen": gen, fmt.Sprintf("ops.example.com/step-%d", g): "x"}, nil)
		eventually(t, "generation "+gen+" on the VMI", func() error {
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
	eventually(t, "synced keys on the Pod", func() error {
		podLabels, _, _ := current(t, r.pod)
		return want("Pod", podLabels, map[string]string{"ops.example.com/gen": fmt.Sprint(generations), "ops.example.com/step-1": "x", "writer.example.com/k-0": ""})
	})
	t.Logf("writer added %d labels; the syncer retried %v VMI patches after a failed test",
		n, run.counter(t, "labelsync_patch_conflicts_total", map[string]string{"target": metrics.TargetVMI}))
}
