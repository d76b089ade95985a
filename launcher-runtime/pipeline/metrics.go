// SPDX-License-Identifier: Apache-2.0

package pipeline

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubevirt-plugins/framework/api/celenv"
	"github.com/kubevirt-plugins/framework/api/hookcounts"
	"github.com/kubevirt-plugins/framework/api/hookresult"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/protos/collectors"
)

// Outcome of one launcher hook at one hook point call, the value of the
// "outcome" label: api/hookresult's, which dispatch shares.
//
// Deprecated: use hookresult.Outcome.
type Outcome = hookresult.Outcome

const (
	// Deprecated: use hookresult.Success.
	OutcomeSuccess = hookresult.Success
	// Deprecated: use hookresult.Error.
	OutcomeError = hookresult.Error
	// Deprecated: use hookresult.Ignored.
	OutcomeIgnored = hookresult.Ignored
	// Deprecated: use hookresult.Skipped.
	OutcomeSkipped = hookresult.Skipped
)

// Metric names registered on Options.Registerer, listed in the package
// documentation.
const (
	MetricHookDuration = metricPrefix + "duration_seconds"
	MetricHookOutcomes = metricPrefix + "outcomes_total"
	MetricHookOverlaps = metricPrefix + "overlaps_total"
	// MetricCELCostLimitExceeded counts the evaluations of a plugin's CEL
	// (its conditions, its GuestDefinition expressions) stopped by the cost
	// limit.
	MetricCELCostLimitExceeded = metricPrefix + "cel_cost_limit_exceeded_total"
)

// metricPrefix begins the name of every metric of the launcher pipeline.
const metricPrefix = pluginv1alpha1.MetricsNamespace + "_launcher_hook_"

type metrics struct {
	duration *prometheus.HistogramVec
	outcomes *prometheus.CounterVec
	overlaps *prometheus.CounterVec
	celLimit *prometheus.CounterVec
}

// newMetrics registers the collectors on reg, or reuses the identical ones an
// earlier Pipeline registered there (README.md, "Metrics"); nil reg gives nil
// metrics, which record nothing.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    MetricHookDuration,
		Help:    "Time a launcher hook took, socket wait included, per plugin and hook point; hooks skipped by their condition are not observed.",
		Buckets: hookcounts.DurationBuckets,
	}, []string{"plugin", "hook_point"})
	outcomes := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricHookOutcomes,
		Help: "Launcher hook runs per plugin, hook point and outcome (success, error, ignored, skipped).",
	}, []string{"plugin", "hook_point", "outcome"})
	overlaps := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricHookOverlaps,
		Help: "Parts of the domain a GuestDefinition hook of plugin changed after a hook of overwritten_plugin had in the same call, whose later value is kept (not counted on a migration target, whose domain is discarded).",
	}, []string{"hook_point", "plugin", "overwritten_plugin"})
	celLimit := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricCELCostLimitExceeded,
		Help: "Evaluations of a plugin's CEL condition or GuestDefinition expression stopped by the CEL cost limit, per plugin and hook point.",
	}, []string{"plugin", "hook_point"})
	m := &metrics{}
	var err error
	if m.duration, err = register(reg, duration); err != nil {
		return nil, err
	}
	if m.outcomes, err = register(reg, outcomes); err != nil {
		return nil, err
	}
	if m.overlaps, err = register(reg, overlaps); err != nil {
		return nil, err
	}
	if m.celLimit, err = register(reg, celLimit); err != nil {
		return nil, err
	}
	return m, nil
}

// register applies the project's registration rule (protos/collectors).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	c, err := collectors.Register(reg, c)
	if err != nil {
		return c, fmt.Errorf("registering launcher hook metrics: %w", err)
	}
	return c, nil
}

// CountedOutcome is one count of the outcome metric, handed to
// Options.OnOutcome: a run of a hook of Plugin at HookPoint that ended with
// Outcome.
type CountedOutcome struct {
	Plugin    string
	HookPoint pluginv1alpha1.LauncherHookPoint
	Outcome   hookresult.Outcome
	// CELCostLimitExceeded: the run failed because the CEL cost limit
	// stopped an evaluation of the plugin's CEL (a condition, a
	// GuestDefinition expression); MetricCELCostLimitExceeded counts it
	// too.
	CELCostLimitExceeded bool
	// Took is the time the run took, which MetricHookDuration observes;
	// a run skipped by its condition is not timed, and Took is 0.
	Took time.Duration
}

// Timed reports whether MetricHookDuration observed the run: every
// outcome but Skipped.
func (c CountedOutcome) Timed() bool {
	return c.Outcome != hookresult.Skipped
}

// CountedOverlap is one count of MetricHookOverlaps, handed to
// Options.OnOverlap: a GuestDefinition hook of Plugin changed a part of the
// domain after a hook of OverwrittenPlugin had, in a call at HookPoint.
type CountedOverlap struct {
	HookPoint         pluginv1alpha1.LauncherHookPoint
	Plugin            string
	OverwrittenPlugin string
}

// count records the outcome of a hook of plugin in the metrics and hands
// it to Options.OnOutcome: both count the same runs.
func (c *call) count(plugin string, outcome hookresult.Outcome, took time.Duration, err error) {
	costLimit := errors.Is(err, celenv.ErrCostLimitExceeded)
	c.p.metrics.observe(plugin, string(c.point), outcome, took, costLimit)
	if f := c.p.opts.OnOutcome; f != nil {
		counted := CountedOutcome{Plugin: plugin, HookPoint: c.point, Outcome: outcome, CELCostLimitExceeded: costLimit}
		if counted.Timed() {
			counted.Took = took
		}
		f(counted)
	}
}

func (m *metrics) observe(plugin, point string, outcome hookresult.Outcome, took time.Duration, costLimit bool) {
	if m == nil {
		return
	}
	m.outcomes.WithLabelValues(plugin, point, string(outcome)).Inc()
	if costLimit {
		m.celLimit.WithLabelValues(plugin, point).Inc()
	}
	if outcome != hookresult.Skipped {
		m.duration.WithLabelValues(plugin, point).Observe(took.Seconds())
	}
}

func (m *metrics) overlapped(point string, o Overlap) {
	if m == nil {
		return
	}
	m.overlaps.WithLabelValues(point, o.Hook.Plugin, o.Overwritten.Plugin).Inc()
}
