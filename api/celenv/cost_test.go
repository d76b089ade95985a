package celenv

import (
	"context"
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
			ce := compileError(t, err, ReasonCost, "estimated cost",
				fmt.Sprintf("exceeds the cost limit %d", DefaultCostLimit))
			if ce.Cost.Max <= DefaultCostLimit || ce.Cost.Min > ce.Cost.Max {
				t.Fatalf("cost %+v is not over the limit %d", ce.Cost, DefaultCostLimit)
			}
			if !strings.Contains(ce.Message, fmt.Sprint(ce.Cost.Max)) {
				t.Fatalf("message %q lacks the estimate %d", ce.Message, ce.Cost.Max)
			}
		})
	}
}

// TestCostLimitIsConfigurable: the limit of Options decides, the same
// expression passes or fails against it.
func TestCostLimitIsConfigurable(t *testing.T) {
	const expr = `vmi.Spec.Domain.Devices.Disks.exists(d, d.Name == "data")`
	c, err := newEnv(t, Options{}).Condition(expr)
	if err != nil {
		t.Fatal(err)
	}
	est := c.EstimatedCost()
	if est.Min == 0 || est.Max < est.Min || est.Max > DefaultCostLimit {
		t.Fatalf("estimate %+v out of range", est)
	}
	if _, err := newEnv(t, Options{CostLimit: est.Max}).Condition(expr); err != nil {
		t.Fatalf("limit equal to the estimate: %v", err)
	}
	_, err = newEnv(t, Options{CostLimit: est.Max - 1}).Condition(expr)
	compileError(t, err, ReasonCost, fmt.Sprint(est.Max), fmt.Sprintf("limit %d", est.Max-1))
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
	e := newEnv(t, Options{CostLimit: limit})
	c, err := e.Condition(`vmi.Name.startsWith(vmi.Namespace)`)
	if err != nil {
		t.Fatal(err)
	}
	if c.EstimatedCost().Max > limit {
		t.Fatalf("estimate %+v over the limit: the test needs an accepted expression", c.EstimatedCost())
	}
	vmi := vmiWithLabels(nil)
	if _, err := c.Eval(context.Background(), vmi); err != nil {
		t.Fatalf("small input: %v", err)
	}
	// 16 MiB: ten times what a stored object can hold.
	vmi.Namespace = strings.Repeat("a", 16<<20)
	vmi.Name = vmi.Namespace
	_, err = c.Eval(context.Background(), vmi)
	if !errors.Is(err, ErrCostLimitExceeded) {
		t.Fatalf("want ErrCostLimitExceeded, got %v", err)
	}
	tr, err := e.DomainTransform(`Domain{Title: vmi.Name.startsWith(vmi.Namespace) ? "a" : "b"}`)
	if err != nil {
		t.Fatal(err)
	}
	d := loadDomain(t, "testdata/domain-small.xml")
	if err := tr.Apply(context.Background(), vmi, d); !errors.Is(err, ErrCostLimitExceeded) {
		t.Fatalf("Apply: want ErrCostLimitExceeded, got %v", err)
	}
	if d.Title != "" {
		t.Fatal("a stopped Apply changed the domain")
	}
}
