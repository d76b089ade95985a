// SPDX-License-Identifier: Apache-2.0

// Package smbioswatchdog is a GuestDefinition handler that sets the guest's
// SMBIOS system information and an i6300esb watchdog from VMI labels:
//
//	smbios.example.com/manufacturer, /product, /version, /serial, /sku, /family
//	    -> <sysinfo type="smbios"><system><entry name="...">
//	       and <os><smbios mode="sysinfo"/>
//	watchdog.example.com/action: reset|shutdown|poweroff|pause|none|dump|inject-nmi
//	    -> <watchdog model="i6300esb" action="..."/>
//
// Entries of the domain's existing SMBIOS system block that no label names
// are kept, so the values KubeVirt sets (uuid, for instance) survive. The
// handler is idempotent: applied to its own output it changes nothing.
package smbioswatchdog
