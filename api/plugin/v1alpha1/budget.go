// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"slices"
	"time"
)

// LauncherHookBudget bounds the time virt-launcher can spend running the
// launcher hooks of plugins at points: at each point some sidecar hook
// serves, SocketWaitBudget for the sockets plus every such hook's
// EffectiveTimeout. CEL hooks are bounded by their cost limit, not by a
// timeout, and add nothing. A host that calls its launcher with a
// deadline (KubeVirt's virt-handler gives each command one) extends it by
// this much, so that a failing hook's own error, which names the Plugin,
// reaches it before the deadline does.
func LauncherHookBudget(plugins []Plugin, points ...LauncherHookPoint) time.Duration {
	var total time.Duration
	for _, point := range points {
		var hooks time.Duration
		sidecars := false
		for i := range plugins {
			for j := range plugins[i].Spec.LauncherHooks {
				h := &plugins[i].Spec.LauncherHooks[j]
				if h.Sidecar == nil || !slices.Contains(h.Sidecar.PermittedHooks, point) {
					continue
				}
				sidecars = true
				hooks += h.EffectiveTimeout()
			}
		}
		if sidecars {
			total += SocketWaitBudget + hooks
		}
	}
	return total
}
