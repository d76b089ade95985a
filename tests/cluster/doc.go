// SPDX-License-Identifier: Apache-2.0

// Package cluster is the real-cluster scenario: the project on a kind
// cluster of three nodes (a control plane, two workers) whose node image
// is built on the machine (hack/kind), with every Pod run by a kubelet.
//
// It applies deploy/ and the samples as a cluster admin would, with
// kubectl built from the same Kubernetes module; creates a VM's launcher
// Pods as KubeVirt would, so that the samples' sidecars are injected (by
// their MutatingAdmissionPolicies where the API server serves them, by the
// plugin-controller's webhook otherwise; KVP_INJECTION=policy|webhook
// chooses); and takes the VM through its life (boot, a template label
// change, a live migration between the workers, stop) with the stand-ins
// of virt-handler and virt-launcher (tests/cluster/standin) linking the
// framework's runtimes. It then breaks things the cluster must survive:
// the plugin-controller leader Pod, a node-hook-recorder Pod and a sidecar
// container; and boots a dedicated-CPU VM, whose Guaranteed launcher Pod
// must stay Guaranteed with its sidecars.
//
// Run backs both `make demo` (cmd/cluster-demo) and TestClusterScenario,
// which runs when KVP_CLUSTER is set (hack/test.sh sets it).
package cluster
