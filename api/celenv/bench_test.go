// SPDX-License-Identifier: Apache-2.0

package celenv

import (
	"errors"
	"fmt"
	"testing"

	"libvirt.org/go/libvirtxml"
)

func BenchmarkConditionEval(b *testing.B) {
	e := newEnv(b, Options{})
	vmi := loadVMI(b, "testdata/vmi-tuned.yaml")
	for _, bc := range []struct{ name, expr string }{
		{"label in", `"example.com/tuning" in vmi.Labels`},
		{"label value", `vmi.Labels["example.com/tuning"] == "cpu"`},
		{"disks exists", `vmi.Spec.Domain.Devices.Disks.exists(d, d.Name == "data" && d.Disk.Bus == "scsi")`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c, err := e.Condition(bc.expr)
			if err != nil {
				b.Fatal(err)
			}
			ctx := b.Context()
			b.ReportAllocs()
			for b.Loop() {
				if ok, err := c.Eval(ctx, vmi); err != nil || !ok {
					b.Fatalf("Eval = %v, %v", ok, err)
				}
			}
		})
	}
}

// BenchmarkConditionCached is the cost of looking up an already compiled
// expression, what a caller pays when it does not keep the *Condition.
func BenchmarkConditionCached(b *testing.B) {
	e := newEnv(b, Options{})
	const expr = `vmi.Labels["example.com/tuning"] == "cpu"`
	if _, err := e.Condition(expr); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Condition(expr); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDomainTransformApply applies GuestDefinition expressions to the
// domain KubeVirt generates (188 lines of XML). Applying again to the same
// domain is what happens when GuestDefinition runs more than once per boot.
func BenchmarkDomainTransformApply(b *testing.B) {
	path := sharedFixture(b, "domain_x86_64.xml")
	e := newEnv(b, Options{})
	vmi := loadVMI(b, "testdata/vmi-tuned.yaml")
	for _, bc := range []struct{ name, expr string }{
		{"guide example", `Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`},
		{"append interface", `Domain{Devices: DomainDeviceList{Interfaces: domainSpec.Devices.Interfaces.filter(i, i.Model.Type != "e1000") + [DomainInterface{Model: DomainInterfaceModel{Type: "e1000"}}]}}`},
		{"conditional result", `vmi.Labels["example.com/tuning"] == "cpu" ? Domain{CPU: DomainCPU{Mode: "host-passthrough"}} : domainSpec`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			tr, err := e.DomainTransform(bc.expr)
			if err != nil {
				b.Fatal(err)
			}
			domain := loadDomain(b, path)
			ctx := b.Context()
			b.ReportAllocs()
			for b.Loop() {
				if err := tr.Apply(ctx, vmi, domain); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkNew is what a new Env costs in a process that built one before
// (cel-go's own set-up done, its code paged in): New alone builds nothing,
// the first expression of a kind builds that kind's environment. The cost in
// a fresh process is measured by tests/coldstart.
func BenchmarkNew(b *testing.B) {
	for _, bc := range []struct{ name, condition, transform string }{
		{name: "nothing compiled"},
		{name: "first condition", condition: `vmi.Labels["example.com/tuning"] == "cpu"`},
		{name: "first GuestDefinition expression", transform: `Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				e, err := New(Options{})
				if err != nil {
					b.Fatal(err)
				}
				if bc.condition != "" {
					if _, err := e.Condition(bc.condition); err != nil {
						b.Fatal(err)
					}
				}
				if bc.transform != "" {
					if _, err := e.DomainTransform(bc.transform); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// The GuestDefinition hooks of the speed comparison in docs/benchmarks.md:
// the first is the one hook of the target (a CPU mode, a watchdog and SMBIOS
// literal, every disk read back), the others its parts, and every disk
// rebuilt one by one in a map() body.
var hookBenchmarks = []struct{ name, expr string }{
	{"one hook", `Domain{CPU: DomainCPU{Mode: "host-passthrough"},
		Devices: DomainDeviceList{Watchdogs: [DomainWatchdog{Model: "i6300esb", Action: "reset"}], Disks: domainSpec.Devices.Disks},
		SysInfo: [DomainSysInfo{SMBIOS: DomainSysInfoSMBIOS{System: DomainSysInfoSystem{Entry: [
			DomainSysInfoEntry{Name: "manufacturer", Value: "Example"}, DomainSysInfoEntry{Name: "product", Value: "Plugin"}]}}}]}`},
	{"cpu mode", `Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`},
	{"watchdog and smbios", `Domain{Devices: DomainDeviceList{Watchdogs: [DomainWatchdog{Model: "i6300esb", Action: "reset"}]},
		SysInfo: [DomainSysInfo{SMBIOS: DomainSysInfoSMBIOS{System: DomainSysInfoSystem{Entry: [
			DomainSysInfoEntry{Name: "manufacturer", Value: "Example"}, DomainSysInfoEntry{Name: "product", Value: "Plugin"}]}}}]}`},
	{"every disk rebuilt by map", `Domain{Devices: DomainDeviceList{Disks: domainSpec.Devices.Disks.map(d, DomainDisk{Device: d.Device,
		Driver: d.Driver, Source: d.Source, BackingStore: d.BackingStore, Target: d.Target, ReadOnly: d.ReadOnly, Serial: d.Serial,
		Boot: d.Boot, Alias: d.Alias, Address: d.Address})}}`},
}

// BenchmarkGuestDefinitionHook is one CEL hook at GuestDefinition on the
// domain KubeVirt generates (shared fixture domain_x86_64.xml): "merge" is
// what the launcher does per call (the compiled expression, Merge copying
// only what it writes); "compile, XML copy, merge" is the baseline of
// KubeVirt's in-tree evaluator, which compiles the expression, copies the
// domain through an XML round trip and merges into the copy on every call.
func BenchmarkGuestDefinitionHook(b *testing.B) {
	path := sharedFixture(b, "domain_x86_64.xml")
	vmi := loadVMI(b, "testdata/vmi-tuned.yaml")
	domain := loadDomain(b, path)
	ctx := b.Context()
	for _, bc := range hookBenchmarks {
		b.Run(bc.name+"/merge", func(b *testing.B) {
			e := newEnv(b, Options{})
			tr, err := e.DomainTransform(bc.expr)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tr.Merge(ctx, vmi, domain); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"/compile, XML copy, merge", func(b *testing.B) {
			e := newEnv(b, Options{})
			b.ReportAllocs()
			call := 0
			for b.Loop() {
				call++
				// A new text each call: the Env's cache must not answer.
				tr, err := e.DomainTransform(fmt.Sprintf("%s // call %d", bc.expr, call))
				if err != nil {
					b.Fatal(err)
				}
				text, err := domain.Marshal()
				if err != nil {
					b.Fatal(err)
				}
				next := &libvirtxml.Domain{}
				if err := next.Unmarshal(text); err != nil {
					b.Fatal(err)
				}
				if err := tr.Apply(ctx, vmi, next); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkConditionNestedField is a condition reading a nested VMI field,
// evaluated compiled once and compiled per call.
func BenchmarkConditionNestedField(b *testing.B) {
	const expr = `vmi.Spec.Domain.CPU.Cores > 1u`
	vmi := loadVMI(b, "testdata/vmi-tuned.yaml")
	ctx := b.Context()
	b.Run("compiled once", func(b *testing.B) {
		c, err := newEnv(b, Options{}).Condition(expr)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if ok, err := c.Eval(ctx, vmi); err != nil || !ok {
				b.Fatalf("Eval = %v, %v", ok, err)
			}
		}
	})
	b.Run("compiled per call", func(b *testing.B) {
		e := newEnv(b, Options{})
		b.ReportAllocs()
		call := 0
		for b.Loop() {
			call++
			c, err := e.Condition(fmt.Sprintf("%s // call %d", expr, call))
			if err != nil {
				b.Fatal(err)
			}
			if ok, err := c.Eval(ctx, vmi); err != nil || !ok {
				b.Fatalf("Eval = %v, %v", ok, err)
			}
		}
	})
}

// BenchmarkConditionManyLabels evaluates the common conditions over labels
// on VMIs with 1,000, 10,000 and 80,000 labels (linear in the labels), and an
// admitted condition nested over the labels, which the condition cost limit
// stops (what a hostile VM owner costs virt-handler at most).
func BenchmarkConditionManyLabels(b *testing.B) {
	e := newEnv(b, Options{})
	for _, bc := range []struct {
		name, expr string
		stopped    bool
	}{
		{"in", `"example.com/tuning" in vmi.Labels`, false},
		{"exists", `vmi.Labels.exists(k, k.startsWith("example.com/"))`, false},
		{"all", `vmi.Labels.all(k, !k.startsWith("example.com/"))`, false},
		{"nested all, stopped", `vmi.Labels.all(a, vmi.Labels.all(b, size(a) + size(b) > 0))`, true},
	} {
		c, err := e.Condition(bc.expr)
		if err != nil {
			b.Fatal(err)
		}
		for _, n := range []int{1_000, 10_000, 80_000} {
			vmi := vmiWithLabels(manyLabels(n, false))
			b.Run(fmt.Sprintf("%s/%d labels", bc.name, n), func(b *testing.B) {
				ctx := b.Context()
				b.ReportAllocs()
				for b.Loop() {
					_, err := c.Eval(ctx, vmi)
					if stopped := errors.Is(err, ErrCostLimitExceeded); stopped != bc.stopped || (err != nil && !stopped) {
						b.Fatalf("Eval: %v", err)
					}
				}
			})
		}
	}
}
