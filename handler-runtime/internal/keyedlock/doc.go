// SPDX-License-Identifier: Apache-2.0

// Package keyedlock provides mutual exclusion per key, holding memory only
// for keys that are locked or waited for. The dispatcher uses it to keep
// the node hooks of one VMI sequential, whatever their hook points, even
// when the host dispatches events of that VMI at once, while other VMIs
// proceed.
package keyedlock
