// Package vm reconciles VirtualMachines: it brings the synced labels and
// annotations of each VM's VirtualMachineInstance (same namespace and name)
// in line with the VM's spec.template.metadata. It never writes the VM.
package vm
