// SPDX-License-Identifier: Apache-2.0

// Package guest tests the test guest (tests/framework/guest) on a real
// libvirtd and QEMU: what it reports is what the domain gave it, what it
// does not get it reports as missing, and a live migration between two
// libvirtd containers keeps it running (same boot, its counter going on).
package guest
