// SPDX-License-Identifier: Apache-2.0

// Package store keeps virt-handler's view of the Plugin resources: an
// informer lists and watches them, and readers take immutable, name-sorted
// snapshots. The store honours the Plugins feature gate: while the gate is
// off every snapshot is empty, so no node hook runs and no launcher is
// handed a plugin.
package store
