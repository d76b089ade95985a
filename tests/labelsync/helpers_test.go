// SPDX-License-Identifier: Apache-2.0

package labelsync

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt-plugins/framework/label-syncer/keyfilter"
	"github.com/kubevirt-plugins/framework/label-syncer/syncer"
)

// waitTimeout bounds every wait for the syncer to act.
const waitTimeout = 30 * time.Second

func mustFilter(t testing.TB, list string) *keyfilter.Filter {
	t.Helper()
	f, err := keyfilter.Parse(list)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// newNamespace creates a namespace with the default ServiceAccount Pods
// need to pass admission (no controller manager runs to make it).
func newNamespace(t testing.TB) string {
	t.Helper()
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "labelsync-"}}
	if err := server.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns.Name}}
	if err := server.Client.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// vmObject returns a VM whose template carries labels and annotations.
func vmObject(ns, name string, labels, annotations map[string]string) *kubevirtv1.VirtualMachine {
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"vm-meta.example.com/not-template": "x"}},
		Spec: kubevirtv1.VirtualMachineSpec{
			RunStrategy: new(kubevirtv1.RunStrategyAlways),
			Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
			},
		},
	}
}

// vmiObject returns the VMI the VM controller would create: owned by vm,
// with the given metadata (KubeVirt copies the template's at creation).
func vmiObject(vm *kubevirtv1.VirtualMachine, labels, annotations map[string]string) *kubevirtv1.VirtualMachineInstance {
	return &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{
			Name: vm.Name, Namespace: vm.Namespace, Labels: labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: kubevirtv1.SchemeGroupVersion.String(), Kind: "VirtualMachine",
				Name: vm.Name, UID: vm.UID, Controller: new(true), BlockOwnerDeletion: new(true),
			}},
		},
	}
}

// launcherPodObject returns a launcher Pod of vmi as virt-controller makes
// it: kubevirt.io=virt-launcher, kubevirt.io/created-by=<VMI UID>, a
// controller reference to the VMI, plus the given metadata.
func launcherPodObject(vmi *kubevirtv1.VirtualMachineInstance, labels, annotations map[string]string) *corev1.Pod {
	l := map[string]string{
		kubevirtv1.AppLabel:       "virt-launcher",
		kubevirtv1.CreatedByLabel: string(vmi.UID),
		"vm.kubevirt.io/name":     vmi.Name,
	}
	maps.Copy(l, labels)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "virt-launcher-" + vmi.Name + "-", Namespace: vmi.Namespace, Labels: l, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: kubevirtv1.SchemeGroupVersion.String(), Kind: "VirtualMachineInstance",
				Name: vmi.Name, UID: vmi.UID, Controller: new(true), BlockOwnerDeletion: new(true),
			}},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "compute", Image: "virt-launcher:test"}}},
	}
}

// running is one VM with its VMI and launcher Pod.
type running struct {
	vm  *kubevirtv1.VirtualMachine
	vmi *kubevirtv1.VirtualMachineInstance
	pod *corev1.Pod
}

// startVM creates a VM, its VMI and its launcher Pod. The VMI and the Pod
// get the template's metadata plus extra (keys the syncer must not touch).
func startVM(t testing.TB, ns, name string, labels, annotations, extraLabels map[string]string) running {
	t.Helper()
	ctx := t.Context()
	vm := vmObject(ns, name, labels, annotations)
	if err := server.Client.Create(ctx, vm); err != nil {
		t.Fatal(err)
	}
	vmiLabels := maps.Clone(labels)
	if vmiLabels == nil {
		vmiLabels = map[string]string{}
	}
	maps.Copy(vmiLabels, extraLabels)
	vmi := vmiObject(vm, vmiLabels, maps.Clone(annotations))
	if err := server.Client.Create(ctx, vmi); err != nil {
		t.Fatal(err)
	}
	pod := launcherPodObject(vmi, vmiLabels, maps.Clone(annotations))
	if err := server.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	return running{vm: vm, vmi: vmi, pod: pod}
}

// patchTemplate merge-patches the VM's spec.template.metadata, as
// `kubectl patch vm --type=merge` does; a nil value deletes the key.
func patchTemplate(t testing.TB, vm *kubevirtv1.VirtualMachine, labels, annotations map[string]any) {
	t.Helper()
	md := map[string]any{}
	if labels != nil {
		md["labels"] = labels
	}
	if annotations != nil {
		md["annotations"] = annotations
	}
	data, err := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": md}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := server.Client.Patch(t.Context(), vm, client.RawPatch(types.MergePatchType, data)); err != nil {
		t.Fatalf("patching the template of %s: %v", vm.Name, err)
	}
}

// mergeLabels merge-patches an object's labels (another writer).
func mergeLabels(ctx context.Context, obj client.Object, labels map[string]any) error {
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err != nil {
		return err
	}
	return server.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, data))
}

// current reads the object's live labels and annotations and UID.
func current(t testing.TB, obj client.Object) (labels, annotations map[string]string, uid types.UID) {
	t.Helper()
	fresh := obj.DeepCopyObject().(client.Object)
	if err := server.Client.Get(t.Context(), client.ObjectKeyFromObject(obj), fresh); err != nil {
		t.Fatal(err)
	}
	return fresh.GetLabels(), fresh.GetAnnotations(), fresh.GetUID()
}

// want checks that m has each key of w with its value; a "" value in w
// means the key must be absent.
func want(kind string, m map[string]string, w map[string]string) error {
	for k, v := range w {
		got, ok := m[k]
		switch {
		case v == "" && ok:
			return fmt.Errorf("%s has %s=%q, want it absent (all: %v)", kind, k, got, m)
		case v != "" && got != v:
			return fmt.Errorf("%s has %s=%q, want %q (all: %v)", kind, k, got, v, m)
		}
	}
	return nil
}

// syncerRun is a syncer manager running in-process.
type syncerRun struct {
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan error
}

// startSyncer runs the syncer's manager against the test API server,
// limited to the given namespaces unless opts says otherwise. It is stopped
// at the end of the test, or earlier with stop.
func startSyncer(t testing.TB, cfg *rest.Config, opts syncer.Options, namespaces ...string) *syncerRun {
	t.Helper()
	return startSyncerWith(t, cfg, opts, nil, namespaces...)
}

// startSyncerWith is startSyncer with manager options besides
// WithoutControllerNameValidation, which every test manager gets: the tests
// run several syncers in one process.
func startSyncerWith(t testing.TB, cfg *rest.Config, opts syncer.Options, mopts []syncer.ManagerOption, namespaces ...string) *syncerRun {
	t.Helper()
	if cfg == nil {
		cfg = rest.CopyConfig(server.Config)
		cfg.QPS = -1
	}
	r := &syncerRun{reg: prometheus.NewRegistry(), done: make(chan error, 1)}
	opts.Registerer = r.reg
	if opts.Namespaces == nil {
		opts.Namespaces = namespaces
	}
	ctx, cancel := context.WithCancel(t.Context())
	r.cancel = cancel
	mgr, err := syncer.NewManager(ctx, cfg, opts, append([]syncer.ManagerOption{syncer.WithoutControllerNameValidation()}, mopts...)...)
	if err != nil {
		cancel()
		t.Fatalf("creating the syncer: %v", err)
	}
	go func() { r.done <- mgr.Start(ctx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, waitTimeout)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		cancel()
		t.Fatalf("syncer caches did not sync within %s", waitTimeout)
	}
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop stops the manager and waits for it to return; safe to call twice.
func (r *syncerRun) stop(t testing.TB) {
	t.Helper()
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	if err := <-r.done; err != nil {
		t.Errorf("syncer manager: %v", err)
	}
}

// counter returns the sum of the metric's series whose labels include
// match.
func (r *syncerRun) counter(t testing.TB, name string, match map[string]string) float64 {
	t.Helper()
	mfs, err := r.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, s := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range s.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for k, v := range match {
				if have[k] != v {
					continue series
				}
			}
			if c := s.GetCounter(); c != nil {
				sum += c.GetValue()
			}
			if h := s.GetHistogram(); h != nil {
				sum += float64(h.GetSampleCount())
			}
		}
	}
	return sum
}
