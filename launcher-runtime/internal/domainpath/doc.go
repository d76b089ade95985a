// SPDX-License-Identifier: Apache-2.0

// Package domainpath names the parts of a libvirt domain a hook changed:
// paths of Go field names from libvirtxml.Domain joined with dots, list
// elements by index ("CPU.Mode", "Devices.Disks[1].Driver.Cache"), the
// vocabulary of GuestDefinition expressions and of celenv's written paths.
// Changed compares two domains (for sidecars, whose answer is a whole
// domain); Overlap tells whether two paths name the same part or one holds
// the other.
package domainpath
