// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of the Plugin resource.
var GroupVersion = schema.GroupVersion{Group: "plugin.kubevirt.io", Version: "v1alpha1"}

// AddToScheme registers the types of this package with a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Plugin{}, &PluginList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
