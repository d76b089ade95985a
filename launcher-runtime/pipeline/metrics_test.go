// SPDX-License-Identifier: Apache-2.0

package pipeline_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
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
