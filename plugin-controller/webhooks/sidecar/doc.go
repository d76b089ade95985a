// SPDX-License-Identifier: Apache-2.0

// Package sidecar serves the mutating admission webhook that injects
// plugin sidecars into virt-launcher Pods, for clusters that do not serve
// MutatingAdmissionPolicy (Kubernetes 1.34 and 1.35 with default feature
// gates), and for any cluster that prefers a webhook.
//
// What it injects is described by ConfigMaps in the controller's namespace
// labelled plugin.kubevirt.io/sidecar (the plugin's name), each with one
// description under the key sidecar.yaml (api/sidecarinjection): the same
// file a plugin's MutatingAdmissionPolicy is generated from, so both paths
// give a launcher Pod the same sidecar. A plugin author ships that
// ConfigMap with the Plugin and writes no webhook or TLS code of their own.
//
// A launcher Pod that carries the label of a ConfigMap whose description
// is invalid is refused, with the ConfigMap, the field and the cause named:
// a VM never starts without a sidecar it asks for.
package sidecar
