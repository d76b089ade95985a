// SPDX-License-Identifier: Apache-2.0

package syncmetrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
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
	m.Refused(TargetVMI, "label")
	if got := testutil.ToFloat64(m.refused.WithLabelValues(TargetVMI, "label")); got != 1 {
		t.Fatalf("refused{VMI,label} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.patches.WithLabelValues(TargetPod)); got != 2 {
		t.Fatalf("patches{Pod} = %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.conflicts.WithLabelValues(TargetVMI)); got != 1 {
		t.Fatalf("conflicts{VMI} = %v, want 1", got)
	}
	n, err := testutil.GatherAndCount(reg, MetricSyncDuration, MetricSyncs)
	if err != nil || n != 2 {
		t.Fatalf("gathered %d series, err %v; want 2", n, err)
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
// neither panic nor record: after calling each, no series of the label
// syncer has a sample, neither on a registry New registered on (which a
// nil *Metrics could only reach through state New kept) nor on the
// process-wide default registry.
func TestNilMetricsRecordNothing(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := New(reg); err != nil {
		t.Fatal(err)
	}
	var m *Metrics
	m.Patched(TargetPod)
	m.Conflict(TargetPod)
	m.Synced(TargetPod, ResultError, time.Second)
	m.Refused(TargetPod, "label")
	names := []string{MetricPatches, MetricPatchConflicts, MetricSyncDuration, MetricSyncs, MetricRefusedKeys}
	for what, g := range map[string]prometheus.Gatherer{"the registry": reg, "the default registry": prometheus.DefaultGatherer} {
		n, err := testutil.GatherAndCount(g, names...)
		if err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("a nil *Metrics recorded %d series on %s", n, what)
		}
	}
}
