// SPDX-License-Identifier: Apache-2.0

package pipeline_test

import (
	"errors"
	"testing"

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
