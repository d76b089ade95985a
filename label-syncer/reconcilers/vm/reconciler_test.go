// SPDX-License-Identifier: Apache-2.0

package vm

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kubevirt-plugins/framework/label-syncer/keyfilter"
	"github.com/kubevirt-plugins/framework/label-syncer/labelsync"
	"github.com/kubevirt-plugins/framework/label-syncer/syncevents"
)

// These tests cover the reconcile decisions on a fake client; the same
// behaviour on a real API server is in tests/labelsync.

const ns = "vms"

type m = map[string]string

func vmWithTemplate(labels, annotations m) *kubevirtv1.VirtualMachine {
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "vm-a", Namespace: ns, UID: "vm-uid"},
		Spec: kubevirtv1.VirtualMachineSpec{
			Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations}},
		},
	}
}

// vmiOf returns the VMI of vm, controlled by controllerUID.
func vmiOf(vm *kubevirtv1.VirtualMachine, controllerUID types.UID, labels m) *kubevirtv1.VirtualMachineInstance {
	return &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{
		Name: vm.Name, Namespace: vm.Namespace, UID: "vmi-uid", Labels: labels,
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: kubevirtv1.SchemeGroupVersion.String(), Kind: "VirtualMachine", Name: vm.Name, UID: controllerUID, Controller: new(true),
		}},
	}}
}

type fixture struct {
	r        *Reconciler
	c        client.Client
	recorder *events.FakeRecorder
	patches  int
}

func newFixture(t *testing.T, patchErr error, objs ...client.Object) *fixture {
	t.Helper()
	s := runtime.NewScheme()
	if err := kubevirtv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	f := &fixture{recorder: events.NewFakeRecorder(10)}
	base := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
	f.c = interceptor.NewClient(base, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			f.patches++
			if patchErr != nil {
				return patchErr
			}
			return c.Patch(ctx, obj, p, opts...)
		},
	})
	labels, err := keyfilter.Parse("ops.example.com/*,app.kubernetes.io/name")
	if err != nil {
		t.Fatal(err)
	}
	annotations, err := keyfilter.Parse("notes.example.com/ticket")
	if err != nil {
		t.Fatal(err)
	}
	f.r = &Reconciler{
		Client: f.c, APIReader: base, Events: syncevents.New(f.recorder, syncevents.Options{}),
		Rules: labelsync.Rules{Labels: labels, Annotations: annotations},
	}
	return f
}

func (f *fixture) reconcile(t *testing.T) error {
	t.Helper()
	_, err := f.r.Reconcile(t.Context(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "vm-a"}})
	return err
}

func (f *fixture) vmi(t *testing.T) *kubevirtv1.VirtualMachineInstance {
	t.Helper()
	vmi := &kubevirtv1.VirtualMachineInstance{}
	if err := f.c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "vm-a"}, vmi); err != nil {
		t.Fatal(err)
	}
	return vmi
}

func TestTemplateKeysAreWrittenToTheVMIAndOthersKept(t *testing.T) {
	vm := vmWithTemplate(
		m{"ops.example.com/owner": "team-b", "app.kubernetes.io/name": "db", "unsynced.example.com/x": "1"},
		m{"notes.example.com/ticket": "T-2"})
	vmi := vmiOf(vm, vm.UID, m{"ops.example.com/owner": "team-a", "ops.example.com/gone": "1", "kubevirt.io/nodeName": "node01"})
	f := newFixture(t, nil, vm, vmi)
	if err := f.reconcile(t); err != nil {
		t.Fatal(err)
	}
	got := f.vmi(t)
	wantLabels := m{"ops.example.com/owner": "team-b", "app.kubernetes.io/name": "db", "kubevirt.io/nodeName": "node01"}
	if !maps.Equal(got.Labels, wantLabels) {
		t.Fatalf("VMI labels = %v, want %v", got.Labels, wantLabels)
	}
	if !maps.Equal(got.Annotations, m{"notes.example.com/ticket": "T-2"}) {
		t.Fatalf("VMI annotations = %v", got.Annotations)
	}
	if f.patches != 1 {
		t.Fatalf("patches = %d, want 1 (labels and annotations together)", f.patches)
	}
	// Once in line, a second reconcile sends nothing.
	if err := f.reconcile(t); err != nil || f.patches != 1 {
		t.Fatalf("second reconcile: err %v, patches %d; want no new patch", err, f.patches)
	}
}

// events returns the events recorded so far.
func (f *fixture) events() []string {
	out := make([]string, len(f.recorder.Events))
	for i := range out {
		out[i] = <-f.recorder.Events
	}
	return out
}

// TestRoutineSyncRecordsNoEvent: a sync that writes the template's keys is
// counted and logged at verbosity 1, never recorded as an event: at scale
// an event per sync doubles the API writes.
func TestRoutineSyncRecordsNoEvent(t *testing.T) {
	vm := vmWithTemplate(m{"ops.example.com/owner": "team-b"}, m{"notes.example.com/ticket": "T-2"})
	vmi := vmiOf(vm, vm.UID, m{"ops.example.com/owner": "team-a", "ops.example.com/gone": "1"})
	f := newFixture(t, nil, vm, vmi)
	if err := f.reconcile(t); err != nil {
		t.Fatal(err)
	}
	if f.patches != 1 {
		t.Fatalf("patches = %d, want 1", f.patches)
	}
	if got := f.events(); len(got) != 0 {
		t.Fatalf("a routine sync recorded events: %q", got)
	}
}

// TestKeyTheVMICannotTakeIsRefusedWithAWarning: a template label value the
// API server would reject is not written, the other keys are, and a Warning
// event on the VMI says which key and why.
func TestKeyTheVMICannotTakeIsRefusedWithAWarning(t *testing.T) {
	vm := vmWithTemplate(m{"ops.example.com/owner": "team-b", "ops.example.com/bad": "not a label value!"}, nil)
	vmi := vmiOf(vm, vm.UID, m{"ops.example.com/owner": "team-a"})
	f := newFixture(t, nil, vm, vmi)
	if err := f.reconcile(t); err != nil {
		t.Fatal(err)
	}
	if got := f.vmi(t).Labels; !maps.Equal(got, m{"ops.example.com/owner": "team-b"}) {
		t.Fatalf("VMI labels = %v, want the valid key synced and the refused one absent", got)
	}
	got := f.events()
	if len(got) != 1 {
		t.Fatalf("events %q, want one", got)
	}
	for _, w := range []string{"Warning", syncevents.ReasonKeyRefused, "label ops.example.com/bad not synced to VirtualMachineInstance vm-a", "not a valid label value"} {
		if !strings.Contains(got[0], w) {
			t.Errorf("event %q does not contain %q", got[0], w)
		}
	}
}

// TestFailedPatchRecordsAWarning: a patch the API server refuses for good is
// returned (retried with back-off) and recorded as a Warning event.
func TestFailedPatchRecordsAWarning(t *testing.T) {
	vm := vmWithTemplate(m{"ops.example.com/owner": "team-b"}, nil)
	vmi := vmiOf(vm, vm.UID, nil)
	f := newFixture(t, errors.New("denied by an admission webhook"), vm, vmi)
	if err := f.reconcile(t); err == nil {
		t.Fatal("no error")
	}
	got := f.events()
	if len(got) != 1 || !strings.Contains(got[0], syncevents.ReasonPatchFailed) || !strings.Contains(got[0], "denied by an admission webhook") {
		t.Fatalf("events %q, want one Warning saying the patch failed and why", got)
	}
}

func TestVMIBeingDeletedIsLeftAlone(t *testing.T) {
	vm := vmWithTemplate(m{"ops.example.com/owner": "team-b"}, nil)
	vmi := vmiOf(vm, vm.UID, m{"ops.example.com/owner": "team-a"})
	vmi.Finalizers = []string{"kubevirt.io/virtualMachineControllerFinalize"}
	f := newFixture(t, nil, vm, vmi)
	if err := f.c.Delete(t.Context(), vmi); err != nil {
		t.Fatal(err)
	}
	if f.vmi(t).DeletionTimestamp == nil {
		t.Fatal("fixture: the VMI has no deletionTimestamp")
	}
	if err := f.reconcile(t); err != nil {
		t.Fatal(err)
	}
	if f.patches != 0 || f.vmi(t).Labels["ops.example.com/owner"] != "team-a" {
		t.Fatalf("VMI being deleted was patched (%d patches, labels %v)", f.patches, f.vmi(t).Labels)
	}
}

func TestVMIControlledByAnotherObjectIsLeftAlone(t *testing.T) {
	vm := vmWithTemplate(m{"ops.example.com/owner": "team-b"}, nil)
	vmi := vmiOf(vm, "another-uid", m{"ops.example.com/owner": "team-a"})
	f := newFixture(t, nil, vm, vmi)
	if err := f.reconcile(t); err != nil {
		t.Fatal(err)
	}
	if f.patches != 0 {
		t.Fatalf("VMI of another controller patched %d times", f.patches)
	}
}

func TestNothingToDoWithoutTemplateOrVMI(t *testing.T) {
	noTemplate := vmWithTemplate(nil, nil)
	noTemplate.Spec.Template = nil
	cases := []struct {
		name string
		objs []client.Object
	}{
		{"VM without a template", []client.Object{noTemplate, vmiOf(noTemplate, noTemplate.UID, m{"ops.example.com/owner": "team-a"})}},
		{"VM without a VMI (stopped)", []client.Object{vmWithTemplate(m{"ops.example.com/owner": "team-b"}, nil)}},
		{"VM gone", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, tc.objs...)
			if err := f.reconcile(t); err != nil || f.patches != 0 {
				t.Fatalf("err %v, patches %d; want neither", err, f.patches)
			}
		})
	}
}

func TestPatchErrorNamesTheVMIAndTheVM(t *testing.T) {
	vm := vmWithTemplate(m{"ops.example.com/owner": "team-b"}, nil)
	vmi := vmiOf(vm, vm.UID, nil)
	f := newFixture(t, errors.New("connection refused"), vm, vmi)
	err := f.reconcile(t)
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range []string{"VirtualMachineInstance vms/vm-a", "VirtualMachine vm-a", "connection refused"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}
