// SPDX-License-Identifier: Apache-2.0

// Package collectors holds the project's one rule for registering a
// Prometheus collector (README.md, "Metrics and logs"): a collector
// identical to one already registered on the Registerer is not registered
// again, the one there is used; any other failure is returned. The SDK, the
// launcher pipeline and the node hook dispatcher register through it.
package collectors

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c on reg and returns it, or returns the identical
// collector of the same type already registered there. Any other failure,
// such as a different collector of the same name, is returned with c.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, err
}
