// SPDX-License-Identifier: Apache-2.0

package syncer

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func TestCachedVMKeepsOnlyMetadataAndTemplateMetadata(t *testing.T) {
	vm := &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "ns", UID: "u", Generation: 3, Labels: map[string]string{"a": "1"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec: kubevirtv1.VirtualMachineSpec{
			RunStrategy: new(kubevirtv1.RunStrategyAlways),
			Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"ops.example.com/x": "1"}, Annotations: map[string]string{"n": "v"}},
				Spec:       kubevirtv1.VirtualMachineInstanceSpec{Hostname: "big"},
			},
		},
		Status: kubevirtv1.VirtualMachineStatus{Ready: true},
	}
	out, err := keepVMTemplateMetadata(vm)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*kubevirtv1.VirtualMachine)
	if got.Name != "vm" || got.UID != "u" || got.Generation != 3 || got.Labels["a"] != "1" {
		t.Fatalf("metadata lost: %+v", got.ObjectMeta)
	}
	if got.ManagedFields != nil || got.Spec.RunStrategy != nil || got.Status.Ready || got.Spec.Template.Spec.Hostname != "" {
		t.Fatalf("kept more than needed: %+v", got)
	}
	if got.Spec.Template.ObjectMeta.Labels["ops.example.com/x"] != "1" || got.Spec.Template.ObjectMeta.Annotations["n"] != "v" {
		t.Fatalf("template metadata lost: %+v", got.Spec.Template.ObjectMeta)
	}
}

func TestCachedVMWithoutTemplateStaysWithoutTemplate(t *testing.T) {
	out, err := keepVMTemplateMetadata(&kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "vm"}})
	if err != nil {
		t.Fatal(err)
	}
	if out.(*kubevirtv1.VirtualMachine).Spec.Template != nil {
		t.Fatal("template invented")
	}
}

func TestCachedVMIKeepsOnlyMetadata(t *testing.T) {
	vmi := &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "vmi", UID: "u", Labels: map[string]string{"a": "1"}, Annotations: map[string]string{"b": "2"}},
		Spec:       kubevirtv1.VirtualMachineInstanceSpec{Hostname: "big"},
		Status:     kubevirtv1.VirtualMachineInstanceStatus{NodeName: "node01"},
	}
	out, err := keepVMIMetadata(vmi)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*kubevirtv1.VirtualMachineInstance)
	if got.UID != "u" || got.Labels["a"] != "1" || got.Annotations["b"] != "2" {
		t.Fatalf("metadata lost: %+v", got.ObjectMeta)
	}
	if got.Spec.Hostname != "" || got.Status.NodeName != "" {
		t.Fatalf("kept more than metadata: %+v", got)
	}
}

func TestTransformsPassOtherObjectsThrough(t *testing.T) {
	pod := &corev1.Pod{}
	for _, f := range []func(any) (any, error){keepVMTemplateMetadata, keepVMIMetadata} {
		out, err := f(pod)
		if err != nil || out != any(pod) {
			t.Fatalf("got %v, %v; want the same object back", out, err)
		}
	}
}
