// SPDX-License-Identifier: Apache-2.0

package libvirtd

import "libvirt.org/go/libvirtxml"

// DisklessDomain is the smallest guest these containers boot: TCG (there is
// no /dev/kvm in them), 64 MiB, one vCPU, no disks, a serial console.
func DisklessDomain(name string) *libvirtxml.Domain {
	return &libvirtxml.Domain{
		Type:   "qemu",
		Name:   name,
		Memory: &libvirtxml.DomainMemory{Value: 64, Unit: "MiB"},
		VCPU:   &libvirtxml.DomainVCPU{Value: 1},
		OS: &libvirtxml.DomainOS{
			Type: &libvirtxml.DomainOSType{Arch: "x86_64", Machine: "pc", Type: "hvm"},
		},
		Devices: &libvirtxml.DomainDeviceList{
			Serials: []libvirtxml.DomainSerial{{Source: &libvirtxml.DomainChardevSource{Pty: &libvirtxml.DomainChardevSourcePty{}}}},
		},
	}
}
