// SPDX-License-Identifier: Apache-2.0

// Package samples holds the integration tests of the sample sidecars'
// injection policies (sample-sidecars/*/injection-policy.yaml) on a real
// kube-apiserver: each MutatingAdmissionPolicy, applied from its sample's
// kustomization, adds the sidecar to opted-in launcher Pods with its own
// directory of the plugin sockets volume, leaves other Pods alone, and
// produces Pods that the launcher sockets ValidatingAdmissionPolicy of
// deploy/policies admits.
package samples
