// SPDX-License-Identifier: Apache-2.0

package syncer

// ManagerOption changes how NewManager builds the manager in a way a
// deployment has no use for: tests and benchmarks pass them; the binary
// has no flag for them.
type ManagerOption func(*managerConfig)

type managerConfig struct {
	fullPodWatch       bool
	skipNameValidation bool
}

// WithFullPodWatch makes the VMI reconciler watch and cache whole launcher
// Pods instead of their metadata only (vmi.Reconciler.FullPodWatch), so
// that a benchmark can measure what the metadata-only watch saves.
func WithFullPodWatch() ManagerOption {
	return func(c *managerConfig) { c.fullPodWatch = true }
}

// WithoutControllerNameValidation lets one process build several managers
// whose controllers have the same names, as tests that run one syncer after
// another do: controller-runtime otherwise refuses a controller name
// already used in the process, which keeps a deployment from registering a
// controller twice.
func WithoutControllerNameValidation() ManagerOption {
	return func(c *managerConfig) { c.skipNameValidation = true }
}

func newManagerConfig(opts []ManagerOption) managerConfig {
	var c managerConfig
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}
