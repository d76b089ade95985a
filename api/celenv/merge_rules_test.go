package celenv

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"libvirt.org/go/libvirtxml"
)

// The tests of this file show the merge rules of the package documentation
// on the small test domain, each with the XML the rule gives. Every output
// here is also defined on libvirt's test driver by
// launcher-runtime/libvirt's TestMergeRuleOutputsAreDomainsLibvirtDefines,
// which runs the same expressions (mergeRuleCases).

// compactXML removes the indentation between elements.
var betweenTags = regexp.MustCompile(`>\s+<`)

func compactXML(s string) string { return betweenTags.ReplaceAllString(strings.TrimSpace(s), "><") }

// mergeRule runs expr on the small test domain and checks that the result
// holds every fragment of want (compact XML) and none of absent.
func mergeRule(t *testing.T, e *Env, expr string, want, absent []string) *libvirtxml.Domain {
	t.Helper()
	tr, err := e.DomainTransform(expr)
	if err != nil {
		t.Fatalf("DomainTransform(%q): %v", expr, err)
	}
	in := loadDomain(t, "testdata/domain-small.xml")
	out, err := tr.Merge(context.Background(), vmiWithLabels(map[string]string{"tier": "gold"}), in)
	if err != nil {
		t.Fatalf("Merge(%q): %v", expr, err)
	}
	got := compactXML(marshalDomain(t, out))
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s\nresult lacks %s:\n%s", expr, w, got)
		}
	}
	for _, a := range absent {
		if strings.Contains(got, a) {
			t.Errorf("%s\nresult holds %s:\n%s", expr, a, got)
		}
	}
	return out
}

// TestMergeReadOfAbsentElementStaysAbsent: a value read from an element the
// domain does not have, written back, leaves the element absent: the second
// disk has no <boot>, so copying its Boot adds no <boot order="0"/> (which
// libvirt refuses); an absent attribute (iothread) stays absent, a present
// one is copied.
func TestMergeReadOfAbsentElementStaysAbsent(t *testing.T) {
	e := newEnv(t, Options{})
	mergeRule(t, e, `Domain{ID: domainSpec.ID, Devices: DomainDeviceList{Disks: [
		DomainDisk{Device: "disk", Source: domainSpec.Devices.Disks[1].Source, Target: domainSpec.Devices.Disks[1].Target,
			Boot: domainSpec.Devices.Disks[1].Boot,
			Driver: DomainDiskDriver{Name: "qemu", IOThread: domainSpec.Devices.Disks[1].Driver.IOThread}},
		DomainDisk{Device: "disk", Target: DomainDiskTarget{Dev: "vdb"},
			Boot: domainSpec.Devices.Disks[0].Boot,
			Driver: DomainDiskDriver{Name: "qemu", IOThread: domainSpec.Devices.Disks[0].Driver.IOThread}}]}}`,
		[]string{
			`<domain type="kvm"><name>`,
			`<disk type="block" device="disk"><driver name="qemu"></driver><source dev="/dev/data"></source><target dev="sda" bus="scsi"></target></disk>`,
			`<disk device="disk"><driver name="qemu" iothread="1"></driver><target dev="vdb"></target><boot order="1"></boot></disk>`,
		},
		[]string{`order="0"`, `iothread="0"`, `id="0"`})
}

// TestMergeKeepsPresentEmptyElements: an element that exists by being present
// (<acpi/>) is kept when read back, and an empty literal adds one (<pae/>).
func TestMergeKeepsPresentEmptyElements(t *testing.T) {
	e := newEnv(t, Options{})
	mergeRule(t, e, `Domain{Features: DomainFeatureList{ACPI: domainSpec.Features.ACPI, PAE: DomainFeature{}}}`,
		[]string{`<features><pae></pae><acpi></acpi></features>`}, nil)
	// An empty literal in a list element too.
	mergeRule(t, e, `Domain{Devices: DomainDeviceList{Disks: domainSpec.Devices.Disks.map(d,
		DomainDisk{Device: d.Device, Source: d.Source, Target: d.Target, ReadOnly: DomainDiskReadOnly{}})}}`,
		[]string{`<target dev="vda" bus="virtio"></target><readonly></readonly></disk>`,
			`<target dev="sda" bus="scsi"></target><readonly></readonly></disk>`}, nil)
}

// TestMergeLiteralChosenByConditionalMergesLikeADirectLiteral: a literal
// reached through ?: merges exactly as the same literal written directly, at
// the top level, nested and in list elements.
func TestMergeLiteralChosenByConditionalMergesLikeADirectLiteral(t *testing.T) {
	e := newEnv(t, Options{})
	for _, tc := range []struct {
		name, direct, chosen string
		want                 []string
	}{
		{"nested",
			`Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`,
			`Domain{CPU: vmi.Labels["tier"] == "gold" ? DomainCPU{Mode: "host-passthrough"} : domainSpec.CPU}`,
			[]string{`<cpu mode="host-passthrough" check="partial"><topology sockets="1" dies="1" clusters="1" cores="4" threads="2"></topology>`}},
		{"top level",
			`Domain{Name: "renamed", CPU: DomainCPU{Check: "none"}}`,
			`vmi.Labels["tier"] == "gold" ? Domain{Name: "renamed", CPU: DomainCPU{Check: "none"}} : domainSpec`,
			[]string{`<name>renamed</name><uuid>`, `<cpu mode="host-model" check="none"><topology`}},
		{"top level clears with a zero value",
			`Domain{UUID: ""}`,
			`vmi.Labels["tier"] == "gold" ? Domain{UUID: ""} : domainSpec`,
			[]string{`<name>prod_db-0</name><memory`}},
		{"list element",
			`Domain{Devices: DomainDeviceList{Disks: domainSpec.Devices.Disks.map(d, DomainDisk{Device: d.Device, Source: d.Source, Target: d.Target, Driver: DomainDiskDriver{Name: "qemu", Cache: "writeback"}})}}`,
			`Domain{Devices: DomainDeviceList{Disks: domainSpec.Devices.Disks.map(d, vmi.Labels["tier"] == "gold" ? DomainDisk{Device: d.Device, Source: d.Source, Target: d.Target, Driver: DomainDiskDriver{Name: "qemu", Cache: d.Driver.Cache == "" ? "none" : "writeback"}} : d)}}`,
			[]string{`<disk type="file" device="disk"><driver name="qemu" cache="writeback"></driver><source file="/var/run/kubevirt-ephemeral-disks/disk-data/rootdisk/disk.qcow2"></source><target dev="vda" bus="virtio"></target></disk>`}},
		{"nested in a list element",
			`Domain{Devices: DomainDeviceList{Disks: domainSpec.Devices.Disks.map(d, DomainDisk{Device: d.Device, Source: d.Source, Target: d.Target, ReadOnly: DomainDiskReadOnly{}})}}`,
			`Domain{Devices: DomainDeviceList{Disks: domainSpec.Devices.Disks.map(d, DomainDisk{Device: d.Device, Source: d.Source, Target: d.Target, ReadOnly: d.Target.Bus == "nvme" ? d.ReadOnly : DomainDiskReadOnly{}})}}`,
			[]string{`<target dev="sda" bus="scsi"></target><readonly></readonly></disk>`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			direct := mergeRule(t, e, tc.direct, tc.want, nil)
			chosen := mergeRule(t, e, tc.chosen, tc.want, nil)
			if d, c := marshalDomain(t, direct), marshalDomain(t, chosen); d != c {
				t.Fatalf("chosen by ?:\n%s\nwritten directly:\n%s", c, d)
			}
		})
	}
	// The title: set by one hook, cleared by the next, either way.
	for _, clear := range []string{`Domain{Title: ""}`, `vmi.Labels["tier"] == "gold" ? Domain{Title: ""} : domainSpec`} {
		set, err := e.DomainTransform(`Domain{Title: "db"}`)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := e.DomainTransform(clear)
		if err != nil {
			t.Fatal(err)
		}
		vmi := vmiWithLabels(map[string]string{"tier": "gold"})
		d, err := set.Merge(context.Background(), vmi, loadDomain(t, "testdata/domain-small.xml"))
		if err != nil || d.Title != "db" {
			t.Fatalf("setting the title: %v, %q", err, d.Title)
		}
		if d, err = cl.Merge(context.Background(), vmi, d); err != nil || d.Title != "" {
			t.Fatalf("%s: title %q, %v", clear, d.Title, err)
		}
	}
}

// TestMergeAdmitsPerDeviceMapEdits: a map() over the domain's devices whose
// body builds each device is admitted with the default cost limit, and sets
// what it writes on every device.
func TestMergeAdmitsPerDeviceMapEdits(t *testing.T) {
	e := newEnv(t, Options{})
	mergeRule(t, e, `Domain{Devices: DomainDeviceList{
		Disks: domainSpec.Devices.Disks.map(d, DomainDisk{Device: d.Device, Source: d.Source, Target: d.Target, Alias: d.Alias, Boot: d.Boot,
			Driver: DomainDiskDriver{Name: d.Driver.Name, Type: d.Driver.Type, IOThread: d.Driver.IOThread, Cache: "writeback"}}),
		Interfaces: domainSpec.Devices.Interfaces.map(i, DomainInterface{MAC: i.MAC, Source: i.Source, Target: i.Target, Model: i.Model, MTU: i.MTU, Alias: i.Alias,
			Driver: DomainInterfaceDriver{Queues: 4u}})}}`,
		[]string{
			`<disk type="file" device="disk"><driver name="qemu" type="qcow2" cache="writeback" iothread="1"></driver><source file="/var/run/kubevirt-ephemeral-disks/disk-data/rootdisk/disk.qcow2"></source><target dev="vda" bus="virtio"></target><boot order="1"></boot><alias name="ua-rootdisk"></alias></disk>`,
			`<disk type="block" device="disk"><driver name="qemu" type="raw" cache="writeback"></driver><source dev="/dev/data"></source><target dev="sda" bus="scsi"></target><alias name="ua-data"></alias></disk>`,
			`<interface type="ethernet"><mac address="02:00:00:1a:2b:3c"></mac><target dev="tap0" managed="no"></target><model type="virtio-non-transitional"></model><driver queues="4"></driver><mtu size="1480"></mtu><alias name="ua-default"></alias></interface>`,
		}, nil)
}

// TestHasAndReadsThroughAbsentElements: has() is true for a present element
// (also an empty one) and a non-zero scalar; a read through an absent element
// gives the zero value and has() on it is false.
func TestHasAndReadsThroughAbsentElements(t *testing.T) {
	e := newEnv(t, Options{})
	for _, tc := range []struct {
		cond string
		want bool
	}{
		{`has(domainSpec.Features.ACPI)`, true},
		{`has(domainSpec.Features.PAE)`, false},
		{`has(domainSpec.NUMATune)`, false},
		{`has(domainSpec.NUMATune.Memory)`, false},
		{`domainSpec.NUMATune.Memory.Mode == ""`, true},
		{`has(domainSpec.Devices.Disks[1].Boot)`, false},
		{`domainSpec.Devices.Disks[1].Boot.Order == 0u`, true},
		{`has(domainSpec.Devices.Disks[0].Driver.IOThread)`, true},
		{`has(domainSpec.Devices.Disks[1].Driver.IOThread)`, false},
		{`domainSpec.Devices.Disks[1].Driver.IOThread == 0u`, true},
		{`has(domainSpec.Title)`, false},
		{`size(domainSpec.Devices.Disks) == 2`, true},
		{`size(domainSpec.Devices.Hostdevs) == 0`, true},
	} {
		t.Run(tc.cond, func(t *testing.T) {
			tr, err := e.DomainTransform(`Domain{Title: (` + tc.cond + `) ? "yes" : "no"}`)
			if err != nil {
				t.Fatal(err)
			}
			out, err := tr.Merge(context.Background(), vmiWithLabels(nil), loadDomain(t, "testdata/domain-small.xml"))
			if err != nil {
				t.Fatal(err)
			}
			if got := out.Title == "yes"; got != tc.want {
				t.Fatalf("%s = %v, want %v", tc.cond, got, tc.want)
			}
		})
	}
}
