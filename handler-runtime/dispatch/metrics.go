// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubevirt-plugins/framework/api/celenv"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/protos/collectors"
)

// Values of the outcome label of the call and dispatch metrics: how a call
// (or a whole dispatch) ended, whatever the failure strategy. What became
// of a hook in the dispatch, in logs and Events, is a hookresult.Outcome;
// success and error are the same words.
const (
	OutcomeSuccess = "success"
	OutcomeError   = "error"
	OutcomeTimeout = "timeout"
)

// Metric names registered on Options.Registerer, listed in the package
// documentation.
const (
	MetricCallDuration       = metricPrefix + "call_duration_seconds"
	MetricIgnoredFailures    = metricPrefix + "ignored_failures_total"
	MetricDispatchDuration   = metricPrefix + "dispatch_duration_seconds"
	MetricDispatchesInFlight = metricPrefix + "dispatches_in_flight"
	MetricVMIWait            = metricPrefix + "vmi_wait_seconds"
	// MetricCELCostLimitExceeded counts the evaluations of a plugin's
	// conditions stopped by the CEL cost limit.
	MetricCELCostLimitExceeded = metricPrefix + "cel_cost_limit_exceeded_total"
)

// metricPrefix begins the name of every metric of the dispatcher.
const metricPrefix = pluginv1alpha1.MetricsNamespace + "_node_hook_"

type metrics struct {
	callDuration     *prometheus.HistogramVec
	ignoredFailures  *prometheus.CounterVec
	dispatchDuration *prometheus.HistogramVec
	inFlight         *prometheus.GaugeVec
	vmiWait          *prometheus.HistogramVec
	celLimit         *prometheus.CounterVec
}

// newMetrics registers the collectors on reg, or reuses the identical ones an
// earlier Dispatcher registered there (README.md, "Metrics"); nil reg gives
// unregistered collectors.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{}
	callDuration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    MetricCallDuration,
		Help:    "Duration of node hook calls by plugin, hook point and outcome (success, error, timeout).",
		Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
	}, []string{"plugin", "hook_point", "outcome"})
	ignoredFailures := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricIgnoredFailures,
		Help: "Node hook calls that failed or timed out and were ignored by failureStrategy Ignore.",
	}, []string{"plugin", "hook_point"})
	dispatchDuration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    MetricDispatchDuration,
		Help:    "Duration of whole dispatches (all selected hooks of one VMI at one hook point) by outcome (success, error).",
		Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
	}, []string{"hook_point", "outcome"})
	inFlight := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: MetricDispatchesInFlight,
		Help: "Dispatches currently running, by hook point.",
	}, []string{"hook_point"})
	vmiWait := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    MetricVMIWait,
		Help:    "Time dispatches waited for the dispatch of the same VMI in progress (node hooks of one VMI run one after the other), by hook point.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
	}, []string{"hook_point"})
	celLimit := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricCELCostLimitExceeded,
		Help: "Evaluations of a plugin's conditions stopped by the CEL cost limit, per plugin and hook point.",
	}, []string{"plugin", "hook_point"})
	if reg == nil {
		m.callDuration, m.ignoredFailures, m.dispatchDuration, m.inFlight, m.vmiWait, m.celLimit = callDuration, ignoredFailures, dispatchDuration, inFlight, vmiWait, celLimit
		return m, nil
	}
	var err error
	if m.callDuration, err = register(reg, callDuration); err != nil {
		return nil, err
	}
	if m.ignoredFailures, err = register(reg, ignoredFailures); err != nil {
		return nil, err
	}
	if m.dispatchDuration, err = register(reg, dispatchDuration); err != nil {
		return nil, err
	}
	if m.inFlight, err = register(reg, inFlight); err != nil {
		return nil, err
	}
	if m.vmiWait, err = register(reg, vmiWait); err != nil {
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
		return c, fmt.Errorf("registering node hook metrics: %w", err)
	}
	return c, nil
}

// conditionFailed counts a condition of the plugin err names stopped by the
// CEL cost limit.
func (m *metrics) conditionFailed(point pluginv1alpha1.NodeHookPoint, err error) {
	if !errors.Is(err, celenv.ErrCostLimitExceeded) {
		return
	}
	plugin := ""
	if herr, ok := errors.AsType[*HookError](err); ok {
		plugin = herr.Plugin
	}
	m.celLimit.WithLabelValues(plugin, string(point)).Inc()
}
