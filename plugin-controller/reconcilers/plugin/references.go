// SPDX-License-Identifier: Apache-2.0

package plugin

import (
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

// referencesIndex is the Plugin field index holding "<Kind>/<name>" for
// every admission object a Plugin references.
const referencesIndex = "spec.admissionReferences"

// admissionGroupVersion serves the four kinds. Kubernetes 1.33 to 1.35 do
// not serve MutatingAdmissionPolicy in it (GA in 1.36).
var admissionGroupVersion = admissionregistrationv1.SchemeGroupVersion

// referenceKind is one of the four admission kinds a Plugin may reference.
type referenceKind struct {
	gvk  schema.GroupVersionKind
	obj  client.Object
	refs func(*pluginv1alpha1.PluginSpec) []pluginv1alpha1.AdmissionReference
}

// referenceKinds lists them in the order the status message names them.
func referenceKinds() []referenceKind {
	gv := admissionGroupVersion
	return []referenceKind{
		{
			gvk: gv.WithKind("MutatingAdmissionPolicy"), obj: &admissionregistrationv1.MutatingAdmissionPolicy{},
			refs: func(s *pluginv1alpha1.PluginSpec) []pluginv1alpha1.AdmissionReference {
				return s.MutatingAdmissionPolicies
			},
		},
		{
			gvk: gv.WithKind("ValidatingAdmissionPolicy"), obj: &admissionregistrationv1.ValidatingAdmissionPolicy{},
			refs: func(s *pluginv1alpha1.PluginSpec) []pluginv1alpha1.AdmissionReference {
				return s.ValidatingAdmissionPolicies
			},
		},
		{
			gvk: gv.WithKind("MutatingWebhookConfiguration"), obj: &admissionregistrationv1.MutatingWebhookConfiguration{},
			refs: func(s *pluginv1alpha1.PluginSpec) []pluginv1alpha1.AdmissionReference {
				return s.MutatingAdmissionWebhooks
			},
		},
		{
			gvk: gv.WithKind("ValidatingWebhookConfiguration"), obj: &admissionregistrationv1.ValidatingWebhookConfiguration{},
			refs: func(s *pluginv1alpha1.PluginSpec) []pluginv1alpha1.AdmissionReference {
				return s.ValidatingAdmissionWebhooks
			},
		},
	}
}

// kindNamed returns the reference kind of that Kind name.
func kindNamed(kind string) referenceKind {
	for _, k := range referenceKinds() {
		if k.gvk.Kind == kind {
			return k
		}
	}
	panic("plugin reconciler: unknown admission kind " + kind)
}

// reference is one admission object named by a Plugin.
type reference struct {
	Kind string
	Name string
}

func (r reference) indexKey() string { return r.Kind + "/" + r.Name }

func (r reference) String() string { return r.Kind + " " + r.Name }

// references lists every admission object the spec names, kind by kind in
// referenceKinds order, names in spec order, without duplicates.
func references(spec *pluginv1alpha1.PluginSpec) []reference {
	var out []reference
	for _, k := range referenceKinds() {
		for _, ref := range k.refs(spec) {
			r := reference{Kind: k.gvk.Kind, Name: ref.Name}
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// indexReferences is the IndexerFunc for referencesIndex.
func indexReferences(obj client.Object) []string {
	p, ok := obj.(*pluginv1alpha1.Plugin)
	if !ok {
		return nil
	}
	refs := references(&p.Spec)
	keys := make([]string, 0, len(refs))
	for _, r := range refs {
		keys = append(keys, r.indexKey())
	}
	return keys
}
