// SPDX-License-Identifier: Apache-2.0

package labelsync

import (
	"testing"

	"github.com/kubevirt-plugins/framework/label-syncer/syncer"
	"github.com/kubevirt-plugins/framework/label-syncer/syncmetrics"
	"github.com/kubevirt-plugins/framework/tests/framework/poll"
)

// outside are labels KubeVirt and others put on the VMI and the Pod; no
// pattern covers them, so they must survive every sync unchanged.
var outside = map[string]string{"app": "web", "kubevirt.io/nodeName": "node01", "other.example.com/x": "kept"}

// TestFieldReportExperiment replays the field report: VMs A and B with
// different keys under ops.example.com/*, running; A's template is updated
// and extended, then a key is deleted; B is updated on its own.
func TestFieldReportExperiment(t *testing.T) {
	ns := newNamespace(t)
	a := startVM(t, ns, "vm-a", map[string]string{"ops.example.com/vm-id": "vm-a", "ops.example.com/owner-a": "team-a"}, nil, outside)
	b := startVM(t, ns, "vm-b", map[string]string{"ops.example.com/vm-id": "vm-b", "ops.example.com/owner-b": "team-b"}, nil, outside)
	_, _, podAUID := current(t, a.pod)
	_, _, podBUID := current(t, b.pod)
	run := startSyncer(t, nil, syncer.Options{Labels: mustFilter(t, "ops.example.com/*")}, ns)

	// kubectl patch vm vm-a --type=merge: owner-a updated, dynamic-a added.
	patchTemplate(t, a.vm, map[string]any{"ops.example.com/owner-a": "team-a-v2", "ops.example.com/dynamic-a": "enabled"}, nil)
	wantA := map[string]string{"ops.example.com/vm-id": "vm-a", "ops.example.com/owner-a": "team-a-v2", "ops.example.com/dynamic-a": "enabled"}
	poll.Until(t, "A's update and addition on its VMI and Pod", waitTimeout, func() error {
		return bothHave(t, a, wantA)
	})
	checkOutsideAndUID(t, a, podAUID)

	// Delete dynamic-a from A's template.
	patchTemplate(t, a.vm, map[string]any{"ops.example.com/dynamic-a": nil}, nil)
	poll.Until(t, "A's deletion on its VMI and Pod", waitTimeout, func() error {
		return bothHave(t, a, map[string]string{"ops.example.com/dynamic-a": "", "ops.example.com/owner-a": "team-a-v2"})
	})
	checkOutsideAndUID(t, a, podAUID)

	// B on its own, with keys A does not have.
	patchTemplate(t, b.vm, map[string]any{"ops.example.com/owner-b": "team-b-v2", "ops.example.com/dynamic-b": "blue"}, nil)
	poll.Until(t, "B's update on its VMI and Pod", waitTimeout, func() error {
		return bothHave(t, b, map[string]string{"ops.example.com/owner-b": "team-b-v2", "ops.example.com/dynamic-b": "blue", "ops.example.com/vm-id": "vm-b"})
	})
	checkOutsideAndUID(t, b, podBUID)

	t.Run("B's keys never appear on A's objects, nor A's on B's", func(t *testing.T) {
		if err := bothHave(t, a, map[string]string{"ops.example.com/owner-b": "", "ops.example.com/dynamic-b": "", "ops.example.com/vm-id": "vm-a"}); err != nil {
			t.Error(err)
		}
		if err := bothHave(t, b, map[string]string{"ops.example.com/owner-a": "", "ops.example.com/dynamic-a": "", "ops.example.com/vm-id": "vm-b"}); err != nil {
			t.Error(err)
		}
	})
	t.Run("the VM's own metadata is not synced", func(t *testing.T) {
		if err := bothHave(t, a, map[string]string{"vm-meta.example.com/not-template": ""}); err != nil {
			t.Error(err)
		}
	})
	t.Run("one patch per object and change", func(t *testing.T) {
		// Three template changes (A twice, B once), each one VMI and one
		// Pod patch.
		if got := run.counter(t, syncmetrics.MetricPatches, map[string]string{"target": syncmetrics.TargetVMI}); got != 3 {
			t.Errorf("VMI patches = %v, want 3", got)
		}
		if got := run.counter(t, syncmetrics.MetricPatches, map[string]string{"target": syncmetrics.TargetPod}); got != 3 {
			t.Errorf("Pod patches = %v, want 3", got)
		}
	})
}

// bothHave checks the VMI's and the Pod's labels against w (see want).
func bothHave(t testing.TB, r running, w map[string]string) error {
	vmiLabels, _, _ := current(t, r.vmi)
	if err := want("VMI "+r.vmi.Name, vmiLabels, w); err != nil {
		return err
	}
	podLabels, _, _ := current(t, r.pod)
	return want("Pod "+r.pod.Name, podLabels, w)
}

// checkOutsideAndUID checks that the labels outside the patterns are
// untouched on the VMI and the Pod and that the Pod was patched in place.
func checkOutsideAndUID(t *testing.T, r running, podUID any) {
	t.Helper()
	vmiLabels, _, _ := current(t, r.vmi)
	if err := want("VMI", vmiLabels, outside); err != nil {
		t.Error(err)
	}
	podLabels, _, uid := current(t, r.pod)
	if err := want("Pod", podLabels, outside); err != nil {
		t.Error(err)
	}
	for k, v := range map[string]string{"kubevirt.io": "virt-launcher", "kubevirt.io/created-by": string(r.vmi.UID), "vm.kubevirt.io/name": r.vmi.Name} {
		if podLabels[k] != v {
			t.Errorf("Pod label %s = %q, want %q", k, podLabels[k], v)
		}
	}
	if uid != podUID {
		t.Errorf("Pod UID changed from %v to %v: the Pod was recreated", podUID, uid)
	}
}
