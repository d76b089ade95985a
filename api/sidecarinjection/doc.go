// SPDX-License-Identifier: Apache-2.0

// Package sidecarinjection describes a plugin's sidecar once, as it is
// added to the virt-launcher Pods of the VMIs that use the plugin, and
// applies that description on both injection paths a cluster may offer:
//
//   - Policy renders it as a MutatingAdmissionPolicy and its binding
//     (admissionregistration.k8s.io/v1, served from Kubernetes 1.36 on);
//   - Inject adds it to a Pod in Go, as the plugin-controller's mutating
//     webhook does on every supported minor (1.34 and 1.35 have no
//     MutatingAdmissionPolicy with default feature gates).
//
// Both give the same Pod: a native sidecar (an init container with
// restartPolicy Always) named after the plugin, running as UID 107 with no
// privileges and a read-only root filesystem, mounting its own directory of
// the plugin sockets volume (subPath of one segment) at
// SocketsRoot/<plugin>, with the volumes it needs added when the Pod lacks
// them. Its resources follow the Pod's QoS class: when every container the
// Pod already has sets CPU and memory limits equal to its requests (a
// Guaranteed Pod, as KubeVirt makes for dedicated CPUs), the sidecar gets
// requests equal to limits, so the Pod stays Guaranteed and keeps its
// exclusive CPUs; otherwise it gets light requests. A Pod that already has
// a container of the plugin's name, in either list, is left alone.
//
// The description is a small YAML file (Parse); each sample plugin keeps
// one as sidecar.yaml, from which `kvpctl injection-policy` writes its
// injection-policy.yaml and its kustomization makes the ConfigMap the
// webhook reads.
package sidecarinjection
