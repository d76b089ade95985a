// SPDX-License-Identifier: Apache-2.0

// Package syncertest holds switches of the label syncer that exist only for
// tests and benchmarks; a deployment never needs them, and the binary has no
// flag for them.
package syncertest

import (
	"context"

	"github.com/kubevirt-plugins/framework/label-syncer/internal/podwatch"
)

// WithFullPodWatch returns a context that, given to syncer.NewManager, makes
// the syncer watch and cache whole launcher Pods instead of their metadata
// only. It exists so that the benchmark in tests/labelsync can measure what
// the metadata-only watch saves.
func WithFullPodWatch(ctx context.Context) context.Context {
	return podwatch.WithFull(ctx)
}
