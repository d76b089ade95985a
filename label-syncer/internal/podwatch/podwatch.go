// SPDX-License-Identifier: Apache-2.0

// Package podwatch carries the benchmark-only choice of a full Pod watch
// from package syncertest to the syncer and the VMI reconciler, in the
// context NewManager is given, so that it is no part of their public API.
package podwatch

import "context"

type fullKey struct{}

// WithFull returns ctx marked for a full Pod watch.
func WithFull(ctx context.Context) context.Context {
	return context.WithValue(ctx, fullKey{}, true)
}

// Full reports whether ctx asks for a full Pod watch.
func Full(ctx context.Context) bool {
	full, _ := ctx.Value(fullKey{}).(bool)
	return full
}
