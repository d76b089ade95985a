// SPDX-License-Identifier: Apache-2.0

package syncmetrics

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubevirt-plugins/framework/label-syncer/labelsync"
)

// Target kinds, the values of the "target" label.
const (
	TargetVMI = "VirtualMachineInstance"
	TargetPod = "Pod"
)

// Results of one sync, the values of the "result" label.
const (
	ResultUnchanged = "unchanged"
	ResultPatched   = "patched"
	ResultError     = "error"
)

// The values each label can take, from which New makes every series at 0.
// The "kind" label of refused keys takes labelsync's kinds, the values
// Refused is given.
var (
	targets      = []string{TargetVMI, TargetPod}
	results      = []string{ResultUnchanged, ResultPatched, ResultError}
	refusedKinds = []string{labelsync.KindLabel, labelsync.KindAnnotation}
)

// Metric names, listed in the package documentation.
const (
	MetricPatches        = metricPrefix + "patches_total"
	MetricPatchConflicts = metricPrefix + "patch_conflicts_total"
	MetricSyncDuration   = metricPrefix + "sync_duration_seconds"
	MetricSyncs          = metricPrefix + "syncs_total"
	MetricRefusedKeys    = metricPrefix + "refused_keys_total"
)

// metricsNamespace begins the name of every Prometheus series of the
// project. It is api/plugin/v1alpha1.MetricsNamespace, repeated because
// label-syncer links none of the other modules; tests/metrics checks that
// the two agree.
const metricsNamespace = "kubevirt_plugins"

// metricPrefix begins the name of every metric of the label syncer.
const metricPrefix = metricsNamespace + "_label_syncer_"

// Metrics records what the syncer does. A nil *Metrics records nothing.
type Metrics struct {
	patches   *prometheus.CounterVec
	conflicts *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	syncs     *prometheus.CounterVec
	refused   *prometheus.CounterVec
}

// New creates the metrics and registers them on reg, or reuses the identical
// collectors an earlier New registered there (README.md, "Metrics"). Every
// series of every target, result and kind of refused key is there at 0
// from this call on (package documentation).
func New(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{}
	patches := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricPatches,
		Help: "JSON patches the label syncer wrote, by target kind.",
	}, []string{"target"})
	conflicts := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricPatchConflicts,
		Help: "Patches whose test failed because the target changed after it was read; each is re-read and retried.",
	}, []string{"target"})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    MetricSyncDuration,
		Help:    "Time to bring one target in line with its source, retries included.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	}, []string{"target"})
	syncs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricSyncs,
		Help: "Syncs of one target, by target kind and result (unchanged, patched, error).",
	}, []string{"target", "result"})
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricRefusedKeys,
		Help: "Source keys an entry selects that a target cannot take (a label key or value, or an annotation key, the API server rejects), counted per sync of a target; the other keys are synced.",
	}, []string{"target", "kind"})
	var err error
	if m.patches, err = register(reg, patches); err != nil {
		return nil, err
	}
	if m.conflicts, err = register(reg, conflicts); err != nil {
		return nil, err
	}
	if m.duration, err = register(reg, duration); err != nil {
		return nil, err
	}
	if m.syncs, err = register(reg, syncs); err != nil {
		return nil, err
	}
	if m.refused, err = register(reg, refused); err != nil {
		return nil, err
	}
	m.initialise()
	return m, nil
}

// initialise makes every series whose label values are known in advance,
// at 0, on the collectors m holds. On collectors an earlier New registered
// it finds the series already made, or already counted, and leaves them.
func (m *Metrics) initialise() {
	for _, target := range targets {
		m.patches.WithLabelValues(target)
		m.conflicts.WithLabelValues(target)
		m.duration.WithLabelValues(target)
		for _, result := range results {
			m.syncs.WithLabelValues(target, result)
		}
		for _, kind := range refusedKinds {
			m.refused.WithLabelValues(target, kind)
		}
	}
}

// register registers c on reg, or returns the identical collector already
// registered there; any other failure is returned. It is a deliberate copy
// of protos/collectors.Register, the project's one registration rule:
// label-syncer links none of the other modules, and depending on protos
// would bring gRPC into it for these lines.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, fmt.Errorf("registering label syncer metrics: %w", err)
}

// Patched counts one patch written to a target of the given kind.
func (m *Metrics) Patched(target string) {
	if m != nil {
		m.patches.WithLabelValues(target).Inc()
	}
}

// Conflict counts one patch whose test failed because the target changed.
func (m *Metrics) Conflict(target string) {
	if m != nil {
		m.conflicts.WithLabelValues(target).Inc()
	}
}

// Synced records one finished sync of a target.
func (m *Metrics) Synced(target, result string, took time.Duration) {
	if m != nil {
		m.syncs.WithLabelValues(target, result).Inc()
		m.duration.WithLabelValues(target).Observe(took.Seconds())
	}
}

// Refused counts one source key of kind (labelsync.KindLabel or
// labelsync.KindAnnotation) that a target of the given kind cannot take.
func (m *Metrics) Refused(target, kind string) {
	if m != nil {
		m.refused.WithLabelValues(target, kind).Inc()
	}
}
