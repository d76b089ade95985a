// Package launcherplugins decides what virt-handler hands each
// virt-launcher: the Plugins that have launcher hooks, serialized, with a
// generation that changes whenever that content does, so that the host
// resends only when Plugins changed.
//
// The launcher evaluates plugin and hook conditions itself, at each hook
// point, against the VMI it holds at that moment; the set handed over
// therefore does not depend on the VMI's labels, and a label change never
// requires a resend.
package launcherplugins
