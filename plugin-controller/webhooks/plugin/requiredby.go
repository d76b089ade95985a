// SPDX-License-Identifier: Apache-2.0

package plugin

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kubevirt-plugins/framework/api/plugin/v1alpha1/required"
)

// +kubebuilder:rbac:groups=kubevirt.io,resources=virtualmachineinstances;virtualmachines,verbs=list

// maxNamed bounds the objects a deletion warning names.
const maxNamed = 10

var (
	vmiListKind = schema.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachineInstanceList"}
	vmListKind  = schema.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachineList"}
)

// requiredByWarnings lists, for a Plugin being deleted, the VMIs and the
// VirtualMachine templates that require it (annotation
// plugin.kubevirt.io/required). They are read when the deletion is asked
// for, without a cache: deletions are rare, and the controller then needs
// no watch of every VMI. A cluster without KubeVirt's kinds gives no
// warning; a failed read says that nothing could be checked.
func requiredByWarnings(ctx context.Context, r client.Reader, plugin string) admission.Warnings {
	vmis := &metav1.PartialObjectMetadataList{}
	vmis.SetGroupVersionKind(vmiListKind)
	var warnings admission.Warnings
	var byVMI, byVM []string
	if err := r.List(ctx, vmis); err != nil {
		if !meta.IsNoMatchError(err) {
			warnings = append(warnings, fmt.Sprintf("could not check which VMIs require Plugin %q: %v", plugin, err))
		}
	}
	for i := range vmis.Items {
		if requires(vmis.Items[i].ObjectMeta, plugin) {
			byVMI = append(byVMI, vmis.Items[i].Namespace+"/"+vmis.Items[i].Name)
		}
	}
	vms := &unstructured.UnstructuredList{}
	vms.SetGroupVersionKind(vmListKind)
	if err := r.List(ctx, vms); err != nil {
		if !meta.IsNoMatchError(err) {
			warnings = append(warnings, fmt.Sprintf("could not check which VirtualMachines require Plugin %q: %v", plugin, err))
		}
	}
	for _, vm := range vms.Items {
		annotations, _, _ := unstructured.NestedStringMap(vm.Object, "spec", "template", "metadata", "annotations")
		if requires(metav1.ObjectMeta{Namespace: vm.GetNamespace(), Name: vm.GetName(), Annotations: annotations}, plugin) {
			byVM = append(byVM, vm.GetNamespace()+"/"+vm.GetName())
		}
	}
	if len(byVMI) > 0 {
		warnings = append(warnings, fmt.Sprintf("Plugin %q is required (annotation %s) by %d VMI(s): %s; while no Ready Plugin of that name selects them, their launchers are refused their plugins and PreVMStart fails, so they do not start again",
			plugin, required.Annotation, len(byVMI), named(byVMI)))
	}
	if len(byVM) > 0 {
		warnings = append(warnings, fmt.Sprintf("Plugin %q is required (annotation %s in spec.template) by %d VirtualMachine(s): %s; they will not start without it",
			plugin, required.Annotation, len(byVM), named(byVM)))
	}
	return warnings
}

// requires reports whether the object's required Plugins name plugin; an
// unreadable annotation counts (the VMI will not start either way).
func requires(m metav1.ObjectMeta, plugin string) bool {
	if _, ok := m.Annotations[required.Annotation]; !ok {
		return false
	}
	names, err := required.Names(&kubevirtv1.VirtualMachineInstance{ObjectMeta: m})
	if err != nil {
		return strings.Contains(m.Annotations[required.Annotation], plugin)
	}
	return slices.Contains(names, plugin)
}

// named lists the first maxNamed names, sorted, and how many more there are.
func named(names []string) string {
	sort.Strings(names)
	if len(names) <= maxNamed {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxNamed], ", "), len(names)-maxNamed)
}
