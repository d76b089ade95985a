// SPDX-License-Identifier: Apache-2.0

// Package launcherplugins decides what virt-handler hands each
// virt-launcher: the Plugins that have launcher hooks, each reduced to what
// the launcher runs (name, metadata.generation, spec), serialized, with a
// generation that hashes exactly that content. The host resends only when
// a launcher would run something else: status writes of the plugin
// controller, resourceVersion bumps and label or annotation edits leave
// the data and its generation unchanged.
//
// Each Plugin handed over carries the checked forms of its CEL expressions
// (EncodeChecked), which the handler compiles anyway: the launcher plans
// them without parsing, which is most of what its first expression would
// cost it. A launcher that does not know them compiles the text.
//
// The launcher evaluates plugin and hook conditions itself, at each hook
// point, against the VMI it holds at that moment; the set handed over
// therefore does not depend on the VMI's labels, and a label change never
// requires a resend.
package launcherplugins
