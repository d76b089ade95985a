// SPDX-License-Identifier: Apache-2.0

package pipeline_test

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

func TestMetricsPerPluginHookPointAndOutcome(t *testing.T) {
	root := socketRoot(t)
	reg := prometheus.NewPedanticRegistry()
	pl := plugin("metered",
		sidecarHook(serve(t, root, "metered", "ok.sock", &sidecar{}), pb),
		ignore(sidecarHook(serve(t, root, "metered", "bad.sock", failingPreBoot("boom")), pb)),
		withCondition(sidecarHook(serve(t, root, "metered", "skip.sock", &sidecar{}), pb), `vmi.Name == "other"`),
		celHook(celAppend("x")),
	)
	opts := func(o *pipeline.Options) { o.Registerer = reg }
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{pl}, opts)
	// A second Pipeline on the same registry shares the collectors.
	p2 := newPipeline(t, root, []pluginv1alpha1.Plugin{pl}, opts)
	for _, pp := range []*pipeline.Pipeline{p, p2} {
		if err := pp.PreBoot(t.Context(), testVMI(t), pipeline.Artifacts{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.GuestDefinition(t.Context(), testVMI(t), testDomain(t), pipeline.Boot); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[[3]string]float64{}
	histograms := map[[2]string]uint64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			switch f.GetName() {
			case pipeline.MetricHookOutcomes:
				counts[[3]string{l["plugin"], l["hook_point"], l["outcome"]}] = m.GetCounter().GetValue()
			case pipeline.MetricHookDuration:
				histograms[[2]string{l["plugin"], l["hook_point"]}] = m.GetHistogram().GetSampleCount()
			}
		}
	}
	wantCounts := map[[3]string]float64{
		{"metered", "PreBoot", "success"}:         2,
		{"metered", "PreBoot", "ignored"}:         2,
		{"metered", "PreBoot", "skipped"}:         2,
		{"metered", "GuestDefinition", "success"}: 1,
	}
	if len(counts) != len(wantCounts) {
		t.Errorf("outcome series %v, want %v", counts, wantCounts)
	}
	for k, v := range wantCounts {
		if counts[k] != v {
			t.Errorf("%v = %v, want %v", k, counts[k], v)
		}
	}
	// Skipped hooks are counted, not timed.
	if got := histograms[[2]string{"metered", "PreBoot"}]; got != 4 {
		t.Errorf("PreBoot duration samples %d, want 4", got)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", err, problems)
	}
}

// outcomeTally adds up what Options.OnOutcome receives, as the metrics
// would: per plugin, hook point and outcome, and per plugin and hook point
// for the cost-limit stops.
type outcomeTally struct {
	mu       sync.Mutex
	outcomes map[[3]string]float64
	celLimit map[[2]string]float64
}

func (o *outcomeTally) add(c pipeline.CountedOutcome) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.outcomes == nil {
		o.outcomes, o.celLimit = map[[3]string]float64{}, map[[2]string]float64{}
	}
	o.outcomes[[3]string{c.Plugin, string(c.HookPoint), string(c.Outcome)}]++
	if c.CELCostLimitExceeded {
		o.celLimit[[2]string{c.Plugin, string(c.HookPoint)}]++
	}
}

// A host that is not scraped hands on what the metrics would have counted:
// Options.OnOutcome receives exactly the counts of the outcome and
// cost-limit metrics, a sidecar answer found later not to decode (counted a
// success, then a failure) and a condition stopped by the cost limit
// included, and the same with no Registerer.
func TestOnOutcomeReceivesWhatTheMetricsCountWithOrWithoutARegisterer(t *testing.T) {
	root := socketRoot(t)
	undecodable := &sidecar{guestDefinition: func(context.Context, *hooksv1alpha1.GuestDefinitionRequest) (*hooksv1alpha1.GuestDefinitionResponse, error) {
		return &hooksv1alpha1.GuestDefinitionResponse{DomainXml: []byte(`<domain type="kvm"><name>default_web-01</name><uuid>5b1d8a6e-2f43-4c9a-9a0e-7d3c1e2f4a10</uuid><memory unit="KiB">lots</memory></domain>`)}, nil
	}}
	plugins := []pluginv1alpha1.Plugin{
		plugin("metered",
			sidecarHook(serve(t, root, "metered", "ok.sock", &sidecar{}), pb),
			ignore(sidecarHook(serve(t, root, "metered", "bad.sock", failingPreBoot("boom")), pb)),
			withCondition(sidecarHook(serve(t, root, "metered", "skip.sock", &sidecar{}), pb), `vmi.Name == "other"`),
			celHook(celAppend("x")),
		),
		plugin("undecodable", ignore(sidecarHook(serve(t, root, "undecodable", "hook.sock", undecodable), gd))),
		plugin("walker", withCondition(celHook(celAppend("walked")), `vmi.Labels.all(a, vmi.Labels.all(b, size(a) + size(b) > 0))`)),
	}
	run := func(opts func(*pipeline.Options)) {
		p := newPipeline(t, root, plugins, opts)
		defer p.Close()
		if err := p.PreBoot(t.Context(), testVMI(t), pipeline.Artifacts{}); err != nil {
			t.Fatal(err)
		}
		if _, err := p.GuestDefinition(t.Context(), testVMI(t), testDomain(t), pipeline.Boot); err != nil {
			t.Fatal(err)
		}
		huge := testVMI(t)
		for i := range 5000 {
			huge.Labels[fmt.Sprintf("owner.example.org/l%d", i)] = "v"
		}
		if _, err := p.GuestDefinition(t.Context(), huge, testDomain(t), pipeline.Boot); err == nil {
			t.Fatal("a condition over 5,000 labels was not stopped")
		}
	}
	reg := prometheus.NewPedanticRegistry()
	var withMetrics, without outcomeTally
	run(func(o *pipeline.Options) { o.Registerer, o.OnOutcome = reg, withMetrics.add })
	run(func(o *pipeline.Options) { o.OnOutcome = without.add })

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	metricOutcomes, metricCEL := map[[3]string]float64{}, map[[2]string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			switch f.GetName() {
			case pipeline.MetricHookOutcomes:
				metricOutcomes[[3]string{l["plugin"], l["hook_point"], l["outcome"]}] = m.GetCounter().GetValue()
			case pipeline.MetricCELCostLimitExceeded:
				metricCEL[[2]string{l["plugin"], l["hook_point"]}] = m.GetCounter().GetValue()
			}
		}
	}
	wantOutcomes := map[[3]string]float64{
		{"metered", "PreBoot", "success"}:             1,
		{"metered", "PreBoot", "ignored"}:             1,
		{"metered", "PreBoot", "skipped"}:             1,
		{"metered", "GuestDefinition", "success"}:     2,
		{"undecodable", "GuestDefinition", "success"}: 2,
		// Its answer is decoded, and found wrong, only when a later hook
		// or the end of the chain needs it: the call that walker's stopped
		// condition fails never does.
		{"undecodable", "GuestDefinition", "ignored"}: 1,
		{"walker", "GuestDefinition", "success"}:      1,
		{"walker", "GuestDefinition", "error"}:        1,
	}
	wantCEL := map[[2]string]float64{{"walker", "GuestDefinition"}: 1}
	if !maps.Equal(metricOutcomes, wantOutcomes) || !maps.Equal(metricCEL, wantCEL) {
		t.Fatalf("the metrics counted %v and %v, want %v and %v", metricOutcomes, metricCEL, wantOutcomes, wantCEL)
	}
	for name, got := range map[string]*outcomeTally{"with a Registerer": &withMetrics, "without": &without} {
		if !maps.Equal(got.outcomes, wantOutcomes) {
			t.Errorf("%s: OnOutcome received outcomes %v, the metrics counted %v", name, got.outcomes, wantOutcomes)
		}
		if !maps.Equal(got.celLimit, wantCEL) {
			t.Errorf("%s: OnOutcome received cost-limit stops %v, the metrics counted %v", name, got.celLimit, wantCEL)
		}
	}
}
