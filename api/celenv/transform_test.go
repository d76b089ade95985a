// SPDX-License-Identifier: Apache-2.0

package celenv

import (
	"reflect"
	"strings"
	"testing"

	"libvirt.org/go/libvirtxml"
)

// apply compiles expr and applies it to a fresh copy of the small test domain.
func apply(t *testing.T, e *Env, expr string) (before, after *libvirtxml.Domain) {
	t.Helper()
	tr, err := e.DomainTransform(expr)
	if err != nil {
		t.Fatalf("DomainTransform(%q): %v", expr, err)
	}
	before = loadDomain(t, "testdata/domain-small.xml")
	after = loadDomain(t, "testdata/domain-small.xml")
	if err := tr.Apply(t.Context(), vmiWithLabels(map[string]string{"tier": "gold"}), after); err != nil {
		t.Fatalf("Apply(%q): %v", expr, err)
	}
	return before, after
}

// sameExcept checks that after equals before once fix has been applied to
// before: fix states the whole intended change.
func sameExcept(t *testing.T, before, after *libvirtxml.Domain, fix func(d *libvirtxml.Domain)) {
	t.Helper()
	fix(before)
	if want, got := marshalDomain(t, before), marshalDomain(t, after); want != got {
		t.Fatalf("domain after Apply:\n%s\nwant:\n%s", got, want)
	}
}

// TestMergeExplicitZeroValueOverwrites: a field written in the literal is
// written even when the value is the zero value, which is how an expression
// clears an attribute.
func TestMergeExplicitZeroValueOverwrites(t *testing.T) {
	e := newEnv(t, Options{})
	for _, tc := range []struct {
		expr string
		fix  func(d *libvirtxml.Domain)
	}{
		{`Domain{UUID: ""}`, func(d *libvirtxml.Domain) { d.UUID = "" }},
		{`Domain{IOThreads: 0u}`, func(d *libvirtxml.Domain) { d.IOThreads = 0 }},
		{`Domain{CPU: DomainCPU{Check: ""}}`, func(d *libvirtxml.Domain) { d.CPU.Check = "" }},
		{`Domain{VCPU: DomainVCPU{Placement: "", Value: 0u}}`, func(d *libvirtxml.Domain) { d.VCPU.Placement, d.VCPU.Value = "", 0 }},
		// A pointer to a scalar written as zero is kept, as iothread="0".
		{`Domain{Devices: DomainDeviceList{Disks: [DomainDisk{Driver: DomainDiskDriver{IOThread: 0u}}]}}`, func(d *libvirtxml.Domain) {
			zero := uint(0)
			d.Devices.Disks = []libvirtxml.DomainDisk{{Driver: &libvirtxml.DomainDiskDriver{IOThread: &zero}}}
		}},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			before, after := apply(t, e, tc.expr)
			sameExcept(t, before, after, tc.fix)
		})
	}
}

// TestMergeNeverModifiesItsInput: Merge returns a new domain and leaves the
// one it was given exactly as it was, also when the expression writes deep
// inside elements and lists it read.
func TestMergeNeverModifiesItsInput(t *testing.T) {
	e := newEnv(t, Options{})
	tr, err := e.DomainTransform(`Domain{
		Devices: DomainDeviceList{Disks: domainSpec.Devices.Disks.map(d, DomainDisk{Device: d.Device, Target: d.Target,
			Driver: DomainDiskDriver{Name: d.Driver.Name, Cache: "writeback"}})},
		CPU: DomainCPU{Topology: DomainCPUTopology{Threads: 1}, Features: domainSpec.CPU.Features},
		Features: DomainFeatureList{PAE: DomainFeature{}}}`)
	if err != nil {
		t.Fatal(err)
	}
	d := loadDomain(t, "testdata/domain-small.xml")
	want := loadDomain(t, "testdata/domain-small.xml")
	next, err := tr.Merge(t.Context(), vmiWithLabels(nil), d)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("Merge modified its input:\n%s", marshalDomain(t, d))
	}
	if next == d || next.CPU == d.CPU || next.CPU.Topology == d.CPU.Topology || next.Features == d.Features {
		t.Fatal("a written element is shared with the input")
	}
	if next.Devices.Disks[0].Driver.Cache != "writeback" || next.CPU.Topology.Threads != 1 || next.CPU.Topology.Cores != 4 {
		t.Fatalf("merge result wrong:\n%s", marshalDomain(t, next))
	}
}

func TestTransformWritesPointerScalarsAndNamedTypes(t *testing.T) {
	e := newEnv(t, Options{})
	before, after := apply(t, e, `Domain{
		ID: 7,
		Memory: DomainMemory{Value: 17179869184u},
		Devices: DomainDeviceList{Disks: [DomainDisk{
			Device: "disk",
			Driver: DomainDiskDriver{Name: "qemu", IOThread: 2u, Queues: 4u},
			ReadOnly: DomainDiskReadOnly{},
			Boot: DomainDeviceBoot{Order: 1u},
		}]},
		Features: DomainFeatureList{HyperV: DomainFeatureHyperV{Relaxed: DomainFeatureState{State: "on"}}},
	}`)
	sameExcept(t, before, after, func(d *libvirtxml.Domain) {
		id, iothread, queues := 7, uint(2), uint(4)
		d.ID = &id
		d.Memory.Value = 17179869184 // 16 GiB in bytes: wider than 32 bits
		d.Devices.Disks = []libvirtxml.DomainDisk{{
			Device:   "disk",
			Driver:   &libvirtxml.DomainDiskDriver{Name: "qemu", IOThread: &iothread, Queues: &queues},
			ReadOnly: &libvirtxml.DomainDiskReadOnly{},
			Boot:     &libvirtxml.DomainDeviceBoot{Order: 1},
		}}
		d.Features.HyperV = &libvirtxml.DomainFeatureHyperV{Relaxed: &libvirtxml.DomainFeatureState{State: "on"}}
	})
}

func TestDomainTransformMustReturnDomain(t *testing.T) {
	e := newEnv(t, Options{})
	for _, tc := range []struct{ expr, got string }{
		{`"host-passthrough"`, "string"},
		{`DomainCPU{Mode: "host-passthrough"}`, "libvirtxml.DomainCPU"},
		{`domainSpec.CPU`, "libvirtxml.DomainCPU"},
		{`vmi.Name == "x"`, "bool"},
	} {
		_, err := e.DomainTransform(tc.expr)
		_ = compileError(t, err, ReasonType, "must return a Domain{...}", tc.got)
	}
}

func TestUnknownFieldRejected(t *testing.T) {
	e := newEnv(t, Options{})
	for _, tc := range []struct{ expr, want string }{
		{`Domain{CPUX: DomainCPU{Mode: "host-passthrough"}}`, "undefined field 'CPUX'"},
		{`Domain{CPU: DomainCPU{mode: "host-passthrough"}}`, "undefined field 'mode'"},
		{`Domain{Name: domainSpec.Nme}`, "undefined field 'Nme'"},
		{`Domain{CPU: DomainCPUX{}}`, "undeclared reference to 'DomainCPUX'"},
	} {
		_, err := e.DomainTransform(tc.expr)
		_ = compileError(t, err, ReasonType, tc.want)
	}
	_, err := e.Condition(`vmi.Spec.Domain.Cpu.Cores > 2`)
	_ = compileError(t, err, ReasonType, "undefined field 'Cpu'")
	// Field types are checked too: libvirtxml counts are unsigned.
	_, err = e.DomainTransform(`Domain{VCPU: DomainVCPU{Value: "4"}}`)
	_ = compileError(t, err, ReasonType, "expected type of field 'Value' is 'uint' but provided type is 'string'")
}

// TestApplyErrorLeavesDomainUnchanged: an evaluation error fails Apply and the
// domain is not touched.
func TestApplyErrorLeavesDomainUnchanged(t *testing.T) {
	e := newEnv(t, Options{})
	tr, err := e.DomainTransform(`Domain{Title: "x", Description: vmi.Labels["missing"]}`)
	if err != nil {
		t.Fatal(err)
	}
	d := loadDomain(t, "testdata/domain-small.xml")
	want := marshalDomain(t, d)
	err = tr.Apply(t.Context(), vmiWithLabels(nil), d)
	if err == nil || !strings.Contains(err.Error(), "no such key") {
		t.Fatalf("want a no-such-key error, got %v", err)
	}
	if got := marshalDomain(t, d); got != want {
		t.Fatalf("domain changed by a failed Apply:\n%s", got)
	}
	if err := tr.Apply(t.Context(), vmiWithLabels(nil), nil); err == nil {
		t.Fatal("Apply to a nil domain did not fail")
	}
}

// TestDomainFixtureRoundTripsThroughDomainSpec: a whole KubeVirt domain read
// through domainSpec, field by field, and written back as a literal comes out
// unchanged.
func TestDomainFixtureRoundTripsThroughDomainSpec(t *testing.T) {
	e := newEnv(t, Options{CostLimit: 1 << 40})
	for _, name := range []string{"domain_x86_64.xml", "migration_domain.xml", "testdata/domain-small.xml"} {
		t.Run(name, func(t *testing.T) {
			path := name
			if !strings.HasPrefix(name, "testdata/") {
				path = sharedFixture(t, name)
			}
			want := marshalDomain(t, loadDomain(t, path))
			for _, tc := range []struct{ name, expr string }{
				{"domainSpec itself", "domainSpec"},
				{"every leaf read", domainLiteral("domainSpec", reflect.ValueOf(loadDomain(t, path)).Elem(), true)},
			} {
				tr, err := e.DomainTransform(tc.expr)
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				d := loadDomain(t, path)
				if err := tr.Apply(t.Context(), vmiWithLabels(nil), d); err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				if got := marshalDomain(t, d); got != want {
					t.Fatalf("%s: domain changed:\n%s", tc.name, got)
				}
			}
			// The same domain written from constants onto an empty one.
			tr, err := e.DomainTransform(domainLiteral("", reflect.ValueOf(loadDomain(t, path)).Elem(), false))
			if err != nil {
				t.Fatal(err)
			}
			d := &libvirtxml.Domain{}
			if err := tr.Apply(t.Context(), vmiWithLabels(nil), d); err != nil {
				t.Fatal(err)
			}
			if got := marshalDomain(t, d); got != want {
				t.Fatalf("domain built from a literal:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}
