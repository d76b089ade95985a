// SPDX-License-Identifier: Apache-2.0

package celenv_test

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/kubevirt-plugins/framework/api/celenv"
)

// A plugin's condition decides whether its GuestDefinition expression runs;
// the expression then changes only the fields it writes.
func Example() {
	env, err := celenv.New(celenv.Options{})
	if err != nil {
		panic(err)
	}
	// Compile once, for instance when the Plugin is admitted or first seen;
	// later calls with the same text return the cached compilation.
	cond, err := env.Condition(`vmi.Labels["example.com/tuning"] == "cpu"`)
	if err != nil {
		panic(err)
	}
	transform, err := env.DomainTransform(`Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`)
	if err != nil {
		panic(err)
	}

	ctx := context.Background()
	vmi := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{
		Name: "vm1", Namespace: "default", Labels: map[string]string{"example.com/tuning": "cpu"},
	}}
	domain := &libvirtxml.Domain{Type: "kvm", Name: "default_vm1", CPU: &libvirtxml.DomainCPU{Check: "partial"}}

	applies, err := cond.Eval(ctx, vmi)
	if err != nil {
		panic(err)
	}
	if applies {
		if err := transform.Apply(ctx, vmi, domain); err != nil {
			panic(err)
		}
	}
	out, err := domain.Marshal()
	if err != nil {
		panic(err)
	}
	fmt.Println(out)
	// Output:
	// <domain type="kvm">
	//   <name>default_vm1</name>
	//   <cpu mode="host-passthrough" check="partial"></cpu>
	// </domain>
}

// A rejected expression says why, for an admission webhook to report.
func ExampleCompileError() {
	env, err := celenv.New(celenv.Options{})
	if err != nil {
		panic(err)
	}
	_, err = env.DomainTransform(`Domain{CPUX: DomainCPU{Mode: "host-passthrough"}}`)
	if ce, ok := errors.AsType[*celenv.CompileError](err); ok {
		fmt.Println(ce.Reason)
		fmt.Println(ce.Message)
	}
	// Output:
	// type
	// ERROR: <input>:1:12: undefined field 'CPUX'
	//  | Domain{CPUX: DomainCPU{Mode: "host-passthrough"}}
	//  | ...........^
}

// Merge returns a new domain and leaves the one it is given as it was. A
// literal merges wherever it sits, here inside a map() body chosen by ?:;
// reading back an element the disk does not have (<boot>) keeps it absent.
func ExampleDomainTransform_Merge() {
	env, err := celenv.New(celenv.Options{})
	if err != nil {
		panic(err)
	}
	transform, err := env.DomainTransform(`Domain{Devices: DomainDeviceList{Disks: domainSpec.Devices.Disks.map(d,
		d.Device == "disk" ? DomainDisk{Device: d.Device, Target: d.Target, Boot: d.Boot, Driver: DomainDiskDriver{Name: "qemu", Cache: "writeback"}} : d)}}`)
	if err != nil {
		panic(err)
	}
	domain := &libvirtxml.Domain{Type: "kvm", Name: "default_vm1", Devices: &libvirtxml.DomainDeviceList{Disks: []libvirtxml.DomainDisk{
		{Device: "disk", Target: &libvirtxml.DomainDiskTarget{Dev: "vda", Bus: "virtio"}, Boot: &libvirtxml.DomainDeviceBoot{Order: 1}},
		{Device: "disk", Target: &libvirtxml.DomainDiskTarget{Dev: "vdb", Bus: "virtio"}},
		{Device: "cdrom", Target: &libvirtxml.DomainDiskTarget{Dev: "sda", Bus: "sata"}, ReadOnly: &libvirtxml.DomainDiskReadOnly{}},
	}}}
	vmi := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm1", Namespace: "default"}}
	merged, err := transform.Merge(context.Background(), vmi, domain)
	if err != nil {
		panic(err)
	}
	out, err := merged.Marshal()
	if err != nil {
		panic(err)
	}
	fmt.Println(out)
	fmt.Println("input unchanged:", domain.Devices.Disks[0].Driver == nil)
	// Output:
	// <domain type="kvm">
	//   <name>default_vm1</name>
	//   <devices>
	//     <disk device="disk">
	//       <driver name="qemu" cache="writeback"></driver>
	//       <target dev="vda" bus="virtio"></target>
	//       <boot order="1"></boot>
	//     </disk>
	//     <disk device="disk">
	//       <driver name="qemu" cache="writeback"></driver>
	//       <target dev="vdb" bus="virtio"></target>
	//     </disk>
	//     <disk device="cdrom">
	//       <target dev="sda" bus="sata"></target>
	//       <readonly></readonly>
	//     </disk>
	//   </devices>
	// </domain>
	// input unchanged: true
}
