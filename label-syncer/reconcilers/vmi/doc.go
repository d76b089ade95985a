// SPDX-License-Identifier: Apache-2.0

// Package vmi reconciles VirtualMachineInstances: it brings the synced
// labels and annotations of each VMI's launcher Pods in line with the VMI's
// own. A launcher Pod is a Pod labelled kubevirt.io/created-by=<VMI UID>
// whose controller owner reference is the VMI; during a migration there are
// two. Pods are patched in place (same UID) and never recreated. The Pods of
// a VMI that is being deleted (deletionTimestamp set) are left as they are.
//
// Pods are read through the manager's cache, metadata only (a full Pod
// watch, Reconciler.FullPodWatch, exists for benchmarks alone: the
// syncer's WithFullPodWatch).
package vmi
