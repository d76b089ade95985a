// SPDX-License-Identifier: Apache-2.0

package syncmetrics

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kubevirt-plugins/framework/label-syncer/labelsync"
)

func TestMetricsAreRegisteredOnTheGivenRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.Patched(TargetPod)
	m.Patched(TargetPod)
	m.Conflict(TargetVMI)
	m.Synced(TargetPod, ResultPatched, time.Millisecond)
	m.Refused(TargetVMI, labelsync.KindLabel)
	if got := testutil.ToFloat64(m.refused.WithLabelValues(TargetVMI, labelsync.KindLabel)); got != 1 {
		t.Fatalf("refused{VMI,label} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.patches.WithLabelValues(TargetPod)); got != 2 {
		t.Fatalf("patches{Pod} = %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.conflicts.WithLabelValues(TargetVMI)); got != 1 {
		t.Fatalf("conflicts{VMI} = %v, want 1", got)
	}
	got := gathered(t, reg)
	if n := got[MetricSyncs][seriesKey("target", TargetPod, "result", ResultPatched)]; n != 1 {
		t.Fatalf("syncs{Pod,patched} = %v, want 1", n)
	}
	if n := got[MetricSyncDuration][seriesKey("target", TargetPod)]; n != 1 {
		t.Fatalf("sync_duration_seconds{Pod} has %v samples, want 1", n)
	}
}

func TestRegisteringTwiceOnOneRegistrySharesTheCollectors(t *testing.T) {
	reg := prometheus.NewRegistry()
	m1, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := New(reg)
	if err != nil {
		t.Fatalf("second registration on the same registry: %v", err)
	}
	m1.Patched(TargetPod)
	m2.Patched(TargetPod)
	if got := testutil.ToFloat64(m1.patches.WithLabelValues(TargetPod)); got != 2 {
		t.Fatalf("patches{Pod} = %v, want 2 (one collector shared)", got)
	}
}

func TestRegisteringOverADifferentCollectorOfTheSameNameFails(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{
		Name: MetricPatches,
		Help: "something else",
	}))
	if _, err := New(reg); err == nil {
		t.Fatal("registration over a different collector of the same name succeeded")
	}
}

// TestNilMetricsRecordNothing checks that the methods of a nil *Metrics
// neither panic nor record: after calling each, every series of a registry
// New registered on (which a nil *Metrics could only reach through state
// New kept) is still at 0, and the process-wide default registry has no
// series of the label syncer.
func TestNilMetricsRecordNothing(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := New(reg); err != nil {
		t.Fatal(err)
	}
	var m *Metrics
	m.Patched(TargetPod)
	m.Conflict(TargetPod)
	m.Synced(TargetPod, ResultError, time.Second)
	m.Refused(TargetPod, labelsync.KindLabel)
	for name, series := range gathered(t, reg) {
		for key, v := range series {
			if v != 0 {
				t.Errorf("a nil *Metrics recorded %v in %s{%s} on the registry", v, name, key)
			}
		}
	}
	names := []string{MetricPatches, MetricPatchConflicts, MetricSyncDuration, MetricSyncs, MetricRefusedKeys}
	n, err := testutil.GatherAndCount(prometheus.DefaultGatherer, names...)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("a nil *Metrics recorded %d series on the default registry", n)
	}
}

// TestEverySeriesExistsAtZeroBeforeTheFirstCount checks that New makes,
// at 0, exactly the series of every target, result and kind of refused
// key, and the duration histogram of every target: increase() and rate()
// then see the first count of each.
func TestEverySeriesExistsAtZeroBeforeTheFirstCount(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := New(reg); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	for _, target := range []string{TargetVMI, TargetPod} {
		want[MetricPatches] = append(want[MetricPatches], seriesKey("target", target))
		want[MetricPatchConflicts] = append(want[MetricPatchConflicts], seriesKey("target", target))
		want[MetricSyncDuration] = append(want[MetricSyncDuration], seriesKey("target", target))
		for _, result := range []string{ResultUnchanged, ResultPatched, ResultError} {
			want[MetricSyncs] = append(want[MetricSyncs], seriesKey("target", target, "result", result))
		}
		for _, kind := range []string{labelsync.KindLabel, labelsync.KindAnnotation} {
			want[MetricRefusedKeys] = append(want[MetricRefusedKeys], seriesKey("target", target, "kind", kind))
		}
	}
	got := gathered(t, reg)
	if g, w := slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)); !slices.Equal(g, w) {
		t.Fatalf("gathered the families %v, want %v", g, w)
	}
	for name, keys := range want {
		if g, w := slices.Sorted(maps.Keys(got[name])), slices.Sorted(slices.Values(keys)); !slices.Equal(g, w) {
			t.Errorf("%s has the series %v, want %v", name, g, w)
		}
		for key, v := range got[name] {
			if v != 0 {
				t.Errorf("%s{%s} = %v before anything was counted, want 0", name, key, v)
			}
		}
	}
}

// TestNewAgainKeepsTheCounts checks that a second New on the same registry,
// which makes the series at 0 once more, leaves the counts already there.
func TestNewAgainKeepsTheCounts(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.Patched(TargetPod)
	m.Refused(TargetVMI, labelsync.KindAnnotation)
	m.Synced(TargetVMI, ResultPatched, time.Millisecond)
	if _, err := New(reg); err != nil {
		t.Fatalf("second registration on the same registry: %v", err)
	}
	got := gathered(t, reg)
	for _, c := range []struct {
		name, key string
		want      float64
	}{
		{MetricPatches, seriesKey("target", TargetPod), 1},
		{MetricPatches, seriesKey("target", TargetVMI), 0},
		{MetricRefusedKeys, seriesKey("target", TargetVMI, "kind", labelsync.KindAnnotation), 1},
		{MetricSyncs, seriesKey("target", TargetVMI, "result", ResultPatched), 1},
		{MetricSyncDuration, seriesKey("target", TargetVMI), 1},
	} {
		if v, ok := got[c.name][c.key]; !ok || v != c.want {
			t.Errorf("%s{%s} = %v (present: %t), want %v", c.name, c.key, v, ok, c.want)
		}
	}
}

// gathered returns the series g holds, by metric family and seriesKey of
// their labels: a counter's value, a histogram's sample count.
func gathered(t *testing.T, g prometheus.Gatherer) map[string]map[string]float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	for _, mf := range mfs {
		series := map[string]float64{}
		for _, s := range mf.GetMetric() {
			var pairs []string
			for _, lp := range s.GetLabel() {
				pairs = append(pairs, lp.GetName(), lp.GetValue())
			}
			key := seriesKey(pairs...)
			switch {
			case s.GetCounter() != nil:
				series[key] = s.GetCounter().GetValue()
			case s.GetHistogram() != nil:
				series[key] = float64(s.GetHistogram().GetSampleCount())
			default:
				t.Fatalf("%s{%s} is neither a counter nor a histogram", mf.GetName(), key)
			}
		}
		out[mf.GetName()] = series
	}
	return out
}

// seriesKey writes the label pairs name, value, ... as name="value",
// sorted by name, the way Prometheus shows a series.
func seriesKey(pairs ...string) string {
	var labels []string
	for i := 0; i+1 < len(pairs); i += 2 {
		labels = append(labels, pairs[i]+"="+`"`+pairs[i+1]+`"`)
	}
	slices.Sort(labels)
	return strings.Join(labels, ",")
}
