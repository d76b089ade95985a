// SPDX-License-Identifier: Apache-2.0

// Package cluster is the real-cluster scenario: the project on a kind
// cluster of three nodes (a control plane, two workers) whose node image
// is built on the machine (hack/kind), with every Pod run by a kubelet.
//
// It builds KubeVirt v1.9.0 twice from its released module, as released
// and with kubevirt/patches (the framework inside virt-launcher and
// virt-handler), deploys the release by its own virt-operator, starts a VM
// on it and moves the cluster to the patched build as an admin upgrades
// KubeVirt: the VM live-migrates onto a patched launcher without a
// restart. It then applies deploy/ and the samples as a cluster admin
// would, with kubectl built from the same Kubernetes module (the samples'
// sidecars injected by their MutatingAdmissionPolicies where the API
// server serves them, by the plugin-controller's webhook otherwise;
// KVP_INJECTION=policy|webhook chooses), and takes VMs through their life
// with KubeVirt's own objects: boot, a template label change, live
// migrations, stop, a dedicated CPU, hooks that fail, and faults that fire
// the alerts of deploy/monitoring in a real Prometheus. Pristine runs the
// same checks on the unpatched build.
//
// RunKubeVirtBench (cmd/kubevirt-bench, `make bench-kubevirt`) boots VMs
// on the same kind of cluster to measure the framework against KubeVirt's
// own alpha-1 Plugins.
//
// Run backs both `make demo` (cmd/cluster-demo) and TestClusterScenario,
// which runs when KVP_CLUSTER is set (hack/test.sh sets it).
package cluster
