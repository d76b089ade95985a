// SPDX-License-Identifier: Apache-2.0

package celenv

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestCostLimitRejectedAtCompile(t *testing.T) {
	e := newEnv(t, Options{})
	for _, tc := range []struct {
		name, expr string
		transform  bool
	}{
		{"nested comprehension over disks",
			`vmi.Spec.Domain.Devices.Disks.exists(a, vmi.Spec.Domain.Devices.Disks.exists(b, a.Name != b.Name && a.BootOrder == b.BootOrder))`, false},
		{"regular expression built from an input",
			`vmi.Labels.exists(k, k.matches(vmi.Name))`, false},
		{"quadratic transform",
			`Domain{Title: domainSpec.Devices.Disks.all(a, domainSpec.Devices.Disks.all(b, a.Alias.Name != b.Alias.Name)) ? "unique" : "dup"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.transform {
				_, err = e.DomainTransform(tc.expr)
			} else {
				_, err = e.Condition(tc.expr)
			}
			limit := DefaultConditionCostLimit
			if tc.transform {
				limit = DefaultCostLimit
			}
			ce := compileError(t, err, ReasonCost, "estimated cost",
				fmt.Sprintf("exceeds the cost limit %d", limit))
			if ce.Cost.Max <= limit || ce.Cost.Min > ce.Cost.Max {
				t.Fatalf("cost %+v is not over the limit %d", ce.Cost, limit)
			}
			if !strings.Contains(ce.Message, fmt.Sprint(ce.Cost.Max)) {
				t.Fatalf("message %q lacks the estimate %d", ce.Message, ce.Cost.Max)
			}
		})
	}
}

// TestCostLimitIsConfigurable: the limits of Options decide, the same
// expression passes or fails against the one of its kind, and only that one.
func TestCostLimitIsConfigurable(t *testing.T) {
	const cond = `vmi.Spec.Domain.Devices.Disks.exists(d, d.Name == "data")`
	c, err := newEnv(t, Options{}).Condition(cond)
	if err != nil {
		t.Fatal(err)
	}
	est := c.EstimatedCost()
	if est.Min == 0 || est.Max < est.Min || est.Max > DefaultConditionCostLimit {
		t.Fatalf("estimate %+v out of range", est)
	}
	if _, err := newEnv(t, Options{ConditionCostLimit: est.Max}).Condition(cond); err != nil {
		t.Fatalf("limit equal to the estimate: %v", err)
	}
	_, err = newEnv(t, Options{ConditionCostLimit: est.Max - 1}).Condition(cond)
	_ = compileError(t, err, ReasonCost, fmt.Sprint(est.Max), fmt.Sprintf("limit %d", est.Max-1))
	if _, err := newEnv(t, Options{CostLimit: est.Max - 1}).Condition(cond); err != nil {
		t.Fatalf("the GuestDefinition limit applied to a condition: %v", err)
	}

	const tr = `Domain{Title: vmi.Spec.Domain.Devices.Disks.exists(d, d.Name == "data") ? "a" : "b"}`
	d, err := newEnv(t, Options{}).DomainTransform(tr)
	if err != nil {
		t.Fatal(err)
	}
	est = d.EstimatedCost()
	if _, err := newEnv(t, Options{CostLimit: est.Max}).DomainTransform(tr); err != nil {
		t.Fatalf("limit equal to the estimate: %v", err)
	}
	_, err = newEnv(t, Options{CostLimit: est.Max - 1}).DomainTransform(tr)
	_ = compileError(t, err, ReasonCost, fmt.Sprint(est.Max), fmt.Sprintf("limit %d", est.Max-1))
	if _, err := newEnv(t, Options{ConditionCostLimit: est.Max - 1}).DomainTransform(tr); err != nil {
		t.Fatalf("the condition limit applied to a GuestDefinition expression: %v", err)
	}
}

// TestConditionsHaveALowerCostLimit: a condition whose estimate lies between
// the two default limits is refused, naming the condition limit, while a
// GuestDefinition expression doing the same work is admitted.
func TestConditionsHaveALowerCostLimit(t *testing.T) {
	const body = `vmi.Spec.Domain.Devices.Disks.all(a, vmi.Spec.Domain.Devices.Disks.all(b, a.BootOrder != b.BootOrder || a.Name.size() > 3 || b.Name.size() > 3 || a.BootOrder == 2u))`
	e := newEnv(t, Options{})
	_, err := e.Condition(body)
	ce := compileError(t, err, ReasonCost, fmt.Sprintf("exceeds the cost limit %d", DefaultConditionCostLimit))
	if ce.Cost.Max <= DefaultConditionCostLimit || ce.Cost.Max > DefaultCostLimit {
		t.Fatalf("estimate %+v: the test needs one between the two limits", ce.Cost)
	}
	if _, err := e.DomainTransform(`Domain{Title: ` + body + ` ? "a" : "b"}`); err != nil {
		t.Fatalf("GuestDefinition expression: %v", err)
	}
}

// TestEstimatedCostOfGuideExamples: the estimate is reported for accepted
// expressions, and the guide's are cheap.
func TestEstimatedCostOfGuideExamples(t *testing.T) {
	e := newEnv(t, Options{})
	c1, err := e.Condition(`"example.com/tuning" in vmi.Labels`)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := e.Condition(`vmi.Labels["example.com/tuning"] == "cpu"`)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := e.DomainTransform(`Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, est := range []CostEstimate{c1.EstimatedCost(), c2.EstimatedCost(), tr.EstimatedCost()} {
		if est.Min == 0 || est.Max < est.Min || est.Max > 1000 {
			t.Fatalf("estimate %+v: want a small non-zero range", est)
		}
	}
}

// TestRuntimeCostLimit: an input beyond the bounds the estimator assumes is
// still stopped at run time, by the same limit.
func TestRuntimeCostLimit(t *testing.T) {
	const limit = 1_000_000
	e := newEnv(t, Options{CostLimit: limit, ConditionCostLimit: limit})
	c, err := e.Condition(`vmi.Name.startsWith(vmi.Namespace)`)
	if err != nil {
		t.Fatal(err)
	}
	if c.EstimatedCost().Max > limit {
		t.Fatalf("estimate %+v over the limit: the test needs an accepted expression", c.EstimatedCost())
	}
	vmi := vmiWithLabels(nil)
	if _, err := c.Eval(t.Context(), vmi); err != nil {
		t.Fatalf("small input: %v", err)
	}
	// 16 MiB: ten times what a stored object can hold.
	vmi.Namespace = strings.Repeat("a", 16<<20)
	vmi.Name = vmi.Namespace
	_, err = c.Eval(t.Context(), vmi)
	if !errors.Is(err, ErrCostLimitExceeded) {
		t.Fatalf("want ErrCostLimitExceeded, got %v", err)
	}
	tr, err := e.DomainTransform(`Domain{Title: vmi.Name.startsWith(vmi.Namespace) ? "a" : "b"}`)
	if err != nil {
		t.Fatal(err)
	}
	d := loadDomain(t, "testdata/domain-small.xml")
	if err := tr.Apply(t.Context(), vmi, d); !errors.Is(err, ErrCostLimitExceeded) {
		t.Fatalf("Apply: want ErrCostLimitExceeded, got %v", err)
	}
	if d.Title != "" {
		t.Fatal("a stopped Apply changed the domain")
	}
}

// TestComprehensionsOverInputListsWithStructBodiesAreAdmitted: map(),
// filter() and exists() over the domain's and the VMI's lists, with bodies
// building devices, are admitted at the default limit, their estimates
// bounded by 256 elements a list.
func TestComprehensionsOverInputListsWithStructBodiesAreAdmitted(t *testing.T) {
	e := newEnv(t, Options{})
	for _, expr := range []string{
		`Domain{Devices: DomainDeviceList{Disks: domainSpec.Devices.Disks.map(d, DomainDisk{Device: d.Device, Source: d.Source, Target: d.Target, Alias: d.Alias, Boot: d.Boot,
			Driver: DomainDiskDriver{Name: d.Driver.Name, Type: d.Driver.Type, IOThread: d.Driver.IOThread, Cache: "writeback"}})}}`,
		`Domain{Devices: DomainDeviceList{Interfaces: domainSpec.Devices.Interfaces.map(i, DomainInterface{MAC: i.MAC, Source: i.Source, Target: i.Target, Model: i.Model, Alias: i.Alias,
			Driver: DomainInterfaceDriver{Queues: 4u}})}}`,
		`Domain{Devices: DomainDeviceList{Disks: domainSpec.Devices.Disks.filter(d, d.Device != "cdrom") +
			vmi.Spec.Domain.Devices.Disks.filter(d, has(d.CDRom)).map(d, DomainDisk{Device: "cdrom", Target: DomainDiskTarget{Dev: d.Name, Bus: "sata"}, ReadOnly: DomainDiskReadOnly{}})}}`,
		`vmi.Spec.Domain.Devices.Interfaces.exists(i, i.Name == "default" && has(i.Masquerade)) ? Domain{Devices: DomainDeviceList{Interfaces: domainSpec.Devices.Interfaces.map(i, DomainInterface{MAC: i.MAC, Model: i.Model, Target: i.Target, MTU: DomainInterfaceMTU{Size: 1400u}})}} : domainSpec`,
		`Domain{Devices: DomainDeviceList{Disks: domainSpec.Devices.Disks.map(a, DomainDisk{Device: a.Device, Source: a.Source, Target: a.Target,
			Boot: domainSpec.Devices.Disks.exists(b, b.Boot.Order < a.Boot.Order) ? a.Boot : DomainDeviceBoot{Order: 1u}})}}`,
	} {
		tr, err := e.DomainTransform(expr)
		if err != nil {
			t.Fatalf("%s\nrefused: %v", expr, err)
		}
		if est := tr.EstimatedCost(); est.Max > DefaultCostLimit/10 {
			t.Errorf("%s\nestimate %+v: want well under the limit %d", expr, est, DefaultCostLimit)
		}
	}
}

// TestRunawayExpressionRefusedAtAdmission: comprehensions nested three deep
// over the domain's disks are refused at admission, with the estimate and
// the limit, although each list holds at most 256 elements.
func TestRunawayExpressionRefusedAtAdmission(t *testing.T) {
	e := newEnv(t, Options{})
	_, err := e.DomainTransform(`Domain{Title: domainSpec.Devices.Disks.all(a, domainSpec.Devices.Disks.all(b,
		domainSpec.Devices.Disks.all(c, a.Boot.Order != c.Boot.Order || b.Boot.Order != c.Boot.Order))) ? "unique" : "dup"}`)
	ce := compileError(t, err, ReasonCost, "estimated cost", fmt.Sprintf("exceeds the cost limit %d", DefaultCostLimit))
	if ce.Cost.Max < 100*DefaultCostLimit/10 {
		t.Fatalf("estimate %+v: want far over the limit", ce.Cost)
	}
}

// TestRuntimeCostLimitStopsInputsBeyondTheBounds: an admitted nested
// comprehension over a domain far beyond the 256-device bound is stopped at
// run time by the cost limit (a tenth of the default, to stop sooner), and
// the domain is unchanged.
func TestRuntimeCostLimitStopsInputsBeyondTheBounds(t *testing.T) {
	e := newEnv(t, Options{CostLimit: DefaultCostLimit / 10})
	tr, err := e.DomainTransform(`Domain{Title: domainSpec.Devices.Disks.all(a, domainSpec.Devices.Disks.all(b, a.Boot.Order + b.Boot.Order >= a.Boot.Order)) ? "ordered" : "not"}`)
	if err != nil {
		t.Fatal(err)
	}
	d := loadDomain(t, "testdata/domain-small.xml")
	if _, err := tr.Merge(t.Context(), vmiWithLabels(nil), d); err != nil {
		t.Fatalf("two disks: %v", err)
	}
	for len(d.Devices.Disks) < 5000 {
		d.Devices.Disks = append(d.Devices.Disks, d.Devices.Disks[1])
	}
	out, err := tr.Merge(t.Context(), vmiWithLabels(nil), d)
	if !errors.Is(err, ErrCostLimitExceeded) || out != nil {
		t.Fatalf("5000 disks: want ErrCostLimitExceeded and no domain, got %v, %v", out, err)
	}
}

// TestConstantCostExpressionRunsWithoutCounting: an expression without a
// loop whose cost does not depend on the input always costs what it was
// admitted with, so it runs without the cost tracker, which took most of a
// nested field condition's allocations (13 against 2).
func TestConstantCostExpressionRunsWithoutCounting(t *testing.T) {
	e := newEnv(t, Options{})
	c, err := e.Condition(`vmi.Spec.Domain.CPU.Cores > 1u`)
	if err != nil {
		t.Fatal(err)
	}
	if est := c.EstimatedCost(); est.Min != est.Max {
		t.Fatalf("estimate %+v, want a constant one", est)
	}
	vmi := loadVMI(t, "testdata/vmi-tuned.yaml")
	ctx := t.Context()
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := c.Eval(ctx, vmi); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 4 {
		t.Fatalf("%.0f allocations per evaluation, want at most 4: the cost was counted", allocs)
	}
}
