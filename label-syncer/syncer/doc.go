// SPDX-License-Identifier: Apache-2.0

// Package syncer assembles the label syncer: a controller-runtime manager
// with the VM -> VMI and VMI -> launcher Pod reconcilers, a cache that holds
// only what they read, metrics, health checks and leader election. The
// binary (cmd/label-syncer) only parses flags into Options and starts the
// manager NewManager returns; tests and benchmarks do the same in-process.
package syncer
