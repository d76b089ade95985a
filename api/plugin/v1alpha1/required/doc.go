// SPDX-License-Identifier: Apache-2.0

// Package required reads which Plugins a VMI requires and tells which of
// them a set of Plugins does not satisfy.
//
// A VMI names the Plugins it cannot run without (a disk encryption plugin,
// a compliance hook) in the annotation plugin.kubevirt.io/required, a comma
// separated list of Plugin names; on a VirtualMachine it goes on
// spec.template.metadata.annotations, from where KubeVirt (or the label
// syncer, configured for it) puts it on the VMI. A required Plugin is
// satisfied when it exists, is not being deleted, is Ready for its current
// generation, and its condition holds for the VMI. Otherwise the VM must not
// start unmodified: handler-runtime refuses the launcher its plugins and
// fails PreVMStart, naming each unmet Plugin and why; kvpctl required
// reports the same from files before deploying.
package required
