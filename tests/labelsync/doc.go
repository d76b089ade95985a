// SPDX-License-Identifier: Apache-2.0

// Package labelsync holds the label syncer's integration tests and
// benchmark. They run the syncer's manager in-process (and, for start-up
// checks, the built binary) against a real kube-apiserver and etcd with
// the VirtualMachine and VirtualMachineInstance CRDs, started once in
// TestMain. Launcher Pods are created by the tests; no scheduler or kubelet
// runs, which the syncer does not need.
package labelsync
