// SPDX-License-Identifier: Apache-2.0

package domainpath

import (
	"slices"
	"testing"

	"libvirt.org/go/libvirtxml"
)

const small = `<domain type="kvm">
  <name>vm</name>
  <cpu mode="host-model"><topology sockets="1" cores="2" threads="1"></topology></cpu>
  <features><acpi></acpi></features>
  <devices>
    <disk type="file" device="disk"><driver name="qemu" type="qcow2"></driver><target dev="vda" bus="virtio"></target></disk>
    <disk type="file" device="disk"><driver name="qemu" type="raw"></driver><target dev="vdb" bus="virtio"></target></disk>
  </devices>
</domain>`

func parse(t *testing.T, xml string) *libvirtxml.Domain {
	t.Helper()
	d := &libvirtxml.Domain{}
	if err := d.Unmarshal(xml); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestChangedNamesTheLeavesThatDiffer: what a sidecar changed, as the
// paths an expression would write.
func TestChangedNamesTheLeavesThatDiffer(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(d *libvirtxml.Domain)
		want []string
	}{
		{"nothing", func(*libvirtxml.Domain) {}, nil},
		{"an attribute", func(d *libvirtxml.Domain) { d.CPU.Mode = "host-passthrough" }, []string{"CPU.Mode"}},
		{"an element added with attributes", func(d *libvirtxml.Domain) { d.Title = "t"; d.Memory = &libvirtxml.DomainMemory{Value: 1, Unit: "GiB"} },
			[]string{"Title", "Memory.Value", "Memory.Unit"}},
		{"an empty element added", func(d *libvirtxml.Domain) { d.Features.PAE = &libvirtxml.DomainFeature{} }, []string{"Features.PAE"}},
		{"an element removed", func(d *libvirtxml.Domain) { d.Features.ACPI = nil }, []string{"Features.ACPI"}},
		{"one field of the second list element", func(d *libvirtxml.Domain) { d.Devices.Disks[1].Driver.Cache = "none" }, []string{"Devices.Disks[1].Driver.Cache"}},
		{"a list element appended", func(d *libvirtxml.Domain) {
			d.Devices.Disks = append(d.Devices.Disks, libvirtxml.DomainDisk{Device: "cdrom"})
		}, []string{"Devices.Disks[2]"}},
		{"a list element dropped", func(d *libvirtxml.Domain) { d.Devices.Disks = d.Devices.Disks[:1] }, []string{"Devices.Disks[1]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, after := parse(t, small), parse(t, small)
			tc.edit(after)
			if got := Changed(before, after); !slices.Equal(got, tc.want) {
				t.Errorf("Changed = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestOverlapIsTheSamePartOrOneHoldingTheOther(t *testing.T) {
	for _, tc := range []struct {
		p, q string
		want bool
	}{
		{"CPU.Mode", "CPU.Mode", true},
		{"CPU", "CPU.Mode", true},
		{"CPU.Mode", "CPU", true},
		{"Devices.Disks", "Devices.Disks[1].Driver", true},
		{"", "Title", true},
		{"CPU.Mode", "CPU.Model", false},
		{"CPU.Mode", "CPU.ModeX", false},
		{"Devices.Disks[1]", "Devices.Disks[10]", false},
		{"Title", "Description", false},
	} {
		if got := Overlap(tc.p, tc.q); got != tc.want {
			t.Errorf("Overlap(%q, %q) = %v, want %v", tc.p, tc.q, got, tc.want)
		}
	}
}
