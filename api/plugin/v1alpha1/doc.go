// SPDX-License-Identifier: Apache-2.0

// Package v1alpha1 holds the Plugin custom resource of the
// plugin.kubevirt.io API group: a cluster-scoped object that declares the
// launcher hooks (CEL or gRPC sidecar), the node hooks and the admission
// objects that together extend KubeVirt with out-of-tree behaviour.
//
// +kubebuilder:object:generate=true
// +groupName=plugin.kubevirt.io
package v1alpha1
