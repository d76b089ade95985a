package deepcopy

import (
	"reflect"
	"testing"

	"libvirt.org/go/libvirtxml"
)

func TestCopySharesNoMemory(t *testing.T) {
	id := 7
	src := &libvirtxml.Domain{
		Name: "vm",
		ID:   &id,
		CPU:  &libvirtxml.DomainCPU{Mode: "host-model", Topology: &libvirtxml.DomainCPUTopology{Cores: 2}},
		Devices: &libvirtxml.DomainDeviceList{
			Disks: []libvirtxml.DomainDisk{{Device: "disk", Target: &libvirtxml.DomainDiskTarget{Dev: "vda"}}},
		},
	}
	dst := Of(src)
	if !reflect.DeepEqual(src, dst) {
		t.Fatalf("copy differs from its source")
	}
	*dst.ID = 8
	dst.CPU.Topology.Cores = 4
	dst.Devices.Disks[0].Target.Dev = "vdb"
	dst.Devices.Disks = append(dst.Devices.Disks, libvirtxml.DomainDisk{})
	if *src.ID != 7 || src.CPU.Topology.Cores != 2 || src.Devices.Disks[0].Target.Dev != "vda" || len(src.Devices.Disks) != 1 {
		t.Errorf("changing the copy changed the source: %+v", src)
	}
}

func TestCopyOfMapsAndNil(t *testing.T) {
	type T struct {
		M map[string][]int
		P *int
		S []string
	}
	src := &T{M: map[string][]int{"a": {1}}}
	dst := Of(src)
	dst.M["a"][0] = 2
	if src.M["a"][0] != 1 || dst.P != nil || dst.S != nil {
		t.Errorf("map values shared or nil fields filled: %+v %+v", src, dst)
	}
	if Of[T](nil) != nil {
		t.Errorf("copy of nil is not nil")
	}
}
