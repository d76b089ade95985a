// SPDX-License-Identifier: Apache-2.0

// Package samples holds the example plugins of the framework, one directory
// each: smbios-watchdog (GuestDefinition), cloudinit-network (PreBoot),
// migration-tuner (PreMigrationSource), node-hook-recorder (node hooks) and
// template (a sidecar to copy). This package itself only has the test that
// checks every sample's manifests and README against each other.
package samples
