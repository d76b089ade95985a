// SPDX-License-Identifier: Apache-2.0

// Package vm reconciles VirtualMachines: it brings the synced labels and
// annotations of each VM's VirtualMachineInstance (same namespace and name)
// in line with the VM's spec.template.metadata. It never writes the VM, and
// leaves alone a VMI that another object controls or that is being deleted
// (deletionTimestamp set), as virt-controller does.
package vm
