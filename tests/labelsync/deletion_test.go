// SPDX-License-Identifier: Apache-2.0

package labelsync

import (
	"context"
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt-plugins/framework/label-syncer/syncer"
	"github.com/kubevirt-plugins/framework/tests/framework/poll"
)

// holdFinalizer keeps a deleted VMI around, as virt-controller's finalizer
// does while it shuts the VM down.
const holdFinalizer = "example.com/hold"

// setFinalizers replaces the object's finalizers.
func setFinalizers(t *testing.T, obj client.Object, finalizers []string) {
	t.Helper()
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": finalizers}})
	if err != nil {
		t.Fatal(err)
	}
	// Also a cleanup, when the test's context is already done.
	if err := server.Client.Patch(context.WithoutCancel(t.Context()), obj, client.RawPatch(types.MergePatchType, data)); err != nil {
		t.Fatalf("setting the finalizers of %s: %v", obj.GetName(), err)
	}
}

// TestVMIBeingDeletedIsLeftAlone: a VMI with a deletionTimestamp (held by a
// finalizer) gets no patch when its VM's template changes, and its launcher
// Pod none when the VMI's own labels change, as virt-controller leaves it.
// A second VM and a VMI without a VM, changed after, show the syncer
// handled both changes.
func TestVMIBeingDeletedIsLeftAlone(t *testing.T) {
	ctx := t.Context()
	ns := newNamespace(t)
	gone := startVM(t, ns, "vm-deleting", map[string]string{"ops.example.com/owner": "team-a"}, nil, outside)
	witness := startVM(t, ns, "vm-witness", map[string]string{"ops.example.com/owner": "team-a"}, nil, outside)
	// A VMI without a VM: only the VMI -> Pod reconciler acts on it.
	standalone := running{vmi: &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{
		Name: "vmi-witness", Namespace: ns, Labels: map[string]string{"ops.example.com/owner": "team-a"},
	}}}
	if err := server.Client.Create(ctx, standalone.vmi); err != nil {
		t.Fatal(err)
	}
	standalone.pod = launcherPodObject(standalone.vmi, map[string]string{"ops.example.com/owner": "team-a"}, nil)
	if err := server.Client.Create(ctx, standalone.pod); err != nil {
		t.Fatal(err)
	}
	setFinalizers(t, gone.vmi, []string{holdFinalizer})
	t.Cleanup(func() { setFinalizers(t, gone.vmi, nil) })
	if err := server.Client.Delete(ctx, gone.vmi); err != nil {
		t.Fatal(err)
	}
	if err := server.Client.Get(ctx, client.ObjectKeyFromObject(gone.vmi), gone.vmi); err != nil || gone.vmi.DeletionTimestamp == nil {
		t.Fatalf("the VMI is not held in deletion: %v, deletionTimestamp %v", err, gone.vmi.DeletionTimestamp)
	}
	vmiBefore, _, _ := current(t, gone.vmi)
	podBefore, _, _ := current(t, gone.pod)
	// One worker per reconciler: requests are handled in the order queued.
	startSyncer(t, nil, syncer.Options{Labels: mustFilter(t, "ops.example.com/*"), MaxConcurrentReconciles: 1}, ns)

	// VM template -> VMI.
	patchTemplate(t, gone.vm, map[string]any{"ops.example.com/owner": "team-b"}, nil)
	patchTemplate(t, witness.vm, map[string]any{"ops.example.com/owner": "team-b"}, nil)
	poll.Until(t, "the witness VM synced", waitTimeout, func() error {
		return bothHave(t, witness, map[string]string{"ops.example.com/owner": "team-b"})
	})
	if err := want("VMI being deleted", mustLabels(t, gone.vmi), vmiBefore); err != nil {
		t.Fatalf("VMI being deleted was patched: %v", err)
	}

	// VMI -> Pod: another writer (virt-controller, a person) changes the
	// deleting VMI's label; its Pod is still left alone.
	if err := mergeLabels(ctx, gone.vmi, map[string]any{"ops.example.com/owner": "by-hand"}); err != nil {
		t.Fatal(err)
	}
	if err := mergeLabels(ctx, standalone.vmi, map[string]any{"ops.example.com/owner": "by-hand"}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the witness VMI's label on its Pod", waitTimeout, func() error {
		return want("Pod "+standalone.pod.Name, mustLabels(t, standalone.pod), map[string]string{"ops.example.com/owner": "by-hand"})
	})
	if err := want("launcher Pod of the VMI being deleted", mustLabels(t, gone.pod), podBefore); err != nil {
		t.Fatalf("launcher Pod of the VMI being deleted was patched: %v", err)
	}
	if got := mustLabels(t, gone.vmi)["ops.example.com/owner"]; got != "by-hand" {
		t.Fatalf("the hand edit on the VMI being deleted was put back: %q", got)
	}
}

func mustLabels(t *testing.T, obj client.Object) map[string]string {
	t.Helper()
	l, _, _ := current(t, obj)
	return l
}
