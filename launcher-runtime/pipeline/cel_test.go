// SPDX-License-Identifier: Apache-2.0

package pipeline_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kubevirt-plugins/framework/api/celenv"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
)

// TestCELHookStoppedByTheRuntimeCostLimitNamesPluginAndHook: a CEL hook
// admitted under the input bounds the cost estimate assumes, run on a domain
// far beyond them, is stopped by the run-time cost limit; the error names the
// plugin, the hook and the limit, and the domain given is unchanged.
func TestCELHookStoppedByTheRuntimeCostLimitNamesPluginAndHook(t *testing.T) {
	const expr = `Domain{Title: domainSpec.Devices.Disks.all(a, domainSpec.Devices.Disks.all(b, a.Boot.Order + b.Boot.Order >= a.Boot.Order)) ? "ordered" : "not"}`
	// A tenth of the default limit, so that the stop comes sooner.
	env, err := celenv.New(celenv.Options{CostLimit: celenv.DefaultCostLimit / 10})
	if err != nil {
		t.Fatal(err)
	}
	p := newPipeline(t, socketRoot(t), []pluginv1alpha1.Plugin{plugin("ordering", celHook(celAppend("first")), celHook(expr))},
		func(o *pipeline.Options) { o.CEL = env })
	domain := testDomain(t)
	if _, err := p.GuestDefinition(t.Context(), testVMI(t), domain, pipeline.Boot); err != nil {
		t.Fatalf("a domain within the bounds: %v", err)
	}
	for len(domain.Devices.Disks) < 5000 {
		domain.Devices.Disks = append(domain.Devices.Disks, domain.Devices.Disks[0])
	}
	before, err := domain.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.GuestDefinition(t.Context(), testVMI(t), domain, pipeline.Boot)
	mustContain(t, err, `plugin "ordering" launcher hook #1 (cel) at GuestDefinition`, "cost limit")
	if !errors.Is(err, celenv.ErrCostLimitExceeded) {
		t.Errorf("error does not wrap celenv.ErrCostLimitExceeded: %v", err)
	}
	if after, _ := domain.Marshal(); after != before {
		t.Error("the stopped chain changed the domain it was given")
	}
}

// TestConditionStoppedOnAHugeVMIIsCountedAndNamed: a hook condition admitted
// under the estimate's bound of 256 labels, nested over the labels, on a VMI
// whose owner gave it 5,000, is stopped by the condition cost limit: the
// chain fails with a HookError naming the plugin, the hook and the
// condition, the stop is counted per plugin and hook point, and a VMI with a
// few labels runs the same Pipeline as before.
func TestConditionStoppedOnAHugeVMIIsCountedAndNamed(t *testing.T) {
	const cond = `vmi.Labels.all(a, vmi.Labels.all(b, size(a) + size(b) > 0))`
	reg := prometheus.NewPedanticRegistry()
	h := withCondition(celHook(celAppend("tuned")), cond)
	p := newPipeline(t, socketRoot(t), []pluginv1alpha1.Plugin{plugin("label-walker", h)},
		func(o *pipeline.Options) { o.Registerer = reg })
	vmi := testVMI(t)
	for i := range 5000 {
		vmi.Labels[fmt.Sprintf("owner.example.org/l%d", i)] = "v"
	}
	_, err := p.GuestDefinition(t.Context(), vmi, testDomain(t), pipeline.Boot)
	mustContain(t, err, `plugin "label-walker" launcher hook #0 (cel) at GuestDefinition`, strconv.Quote(cond),
		fmt.Sprintf("limit %d", celenv.DefaultConditionCostLimit))
	if !errors.Is(err, celenv.ErrCostLimitExceeded) {
		t.Errorf("error does not wrap celenv.ErrCostLimitExceeded: %v", err)
	}
	if _, err := p.GuestDefinition(t.Context(), testVMI(t), testDomain(t), pipeline.Boot); err != nil {
		t.Fatalf("a VMI with a few labels: %v", err)
	}
	n, err := testutil.GatherAndCount(reg, pipeline.MetricCELCostLimitExceeded)
	if err != nil || n != 1 {
		t.Fatalf("%s series: %d, %v; want 1", pipeline.MetricCELCostLimitExceeded, n, err)
	}
	want := fmt.Sprintf(`
# HELP %[1]s Evaluations of a plugin's CEL condition or GuestDefinition expression stopped by the CEL cost limit, per plugin and hook point.
# TYPE %[1]s counter
%[1]s{hook_point="GuestDefinition",plugin="label-walker"} 1
`, pipeline.MetricCELCostLimitExceeded)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), pipeline.MetricCELCostLimitExceeded); err != nil {
		t.Fatal(err)
	}
}
