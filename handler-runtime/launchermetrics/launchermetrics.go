// SPDX-License-Identifier: Apache-2.0

package launchermetrics

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubevirt-plugins/framework/api/hookcounts"
	"github.com/kubevirt-plugins/framework/api/hookresult"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/handler-runtime/store"
	"github.com/kubevirt-plugins/framework/protos/collectors"
)

// Metric names registered on Options.Registerer, listed in the package
// documentation: those launcher-runtime's pipeline registers in the
// launcher.
const (
	MetricHookOutcomes         = metricPrefix + "outcomes_total"
	MetricCELCostLimitExceeded = metricPrefix + "cel_cost_limit_exceeded_total"
	MetricHookDuration         = metricPrefix + "duration_seconds"
	MetricHookOverlaps         = metricPrefix + "overlaps_total"
)

// metricPrefix begins the name of every metric of the launcher hooks.
const metricPrefix = pluginv1alpha1.MetricsNamespace + "_launcher_hook_"

// PluginSource provides the Plugins the node knows; *store.Store is one.
type PluginSource interface {
	Snapshot() (store.Snapshot, error)
}

var _ PluginSource = (*store.Store)(nil)

// Options configure Counters.
type Options struct {
	// Plugins are the Plugins a report may name. Required.
	Plugins PluginSource
	// Registerer receives the series. Default: none; Record still checks
	// reports.
	Registerer prometheus.Registerer
}

// Counters are the node's launcher hook series. Safe for concurrent use.
type Counters struct {
	c *collector
}

// New makes the series and registers them on opts.Registerer, or reuses
// those an earlier Counters registered there (with the Plugins it was
// given), following the project's registration rule (protos/collectors).
func New(opts Options) (*Counters, error) {
	if opts.Plugins == nil {
		return nil, errors.New("launchermetrics: Options.Plugins is required")
	}
	c := &collector{
		plugins: opts.Plugins,
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricHookOutcomes,
			Help: "Launcher hook runs per plugin, hook point and outcome (success, error, ignored, skipped), as the virt-launchers of the node reported them to virt-handler.",
		}, []string{"plugin", "hook_point", "outcome"}),
		celLimit: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricCELCostLimitExceeded,
			Help: "Evaluations of a plugin's CEL condition or GuestDefinition expression stopped by the CEL cost limit in a launcher, per plugin and hook point, as the virt-launchers of the node reported them to virt-handler.",
		}, []string{"plugin", "hook_point"}),
		overlaps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricHookOverlaps,
			Help: "Parts of a domain a GuestDefinition hook of plugin changed after a hook of overwritten_plugin had in the same call (the later value is kept), as the virt-launchers of the node reported them to virt-handler.",
		}, []string{"hook_point", "plugin", "overwritten_plugin"}),
		durationDesc: prometheus.NewDesc(MetricHookDuration,
			"Time a launcher hook took, socket wait included, per plugin and hook point (runs skipped by their condition are not timed), as the virt-launchers of the node reported them to virt-handler.",
			[]string{"plugin", "hook_point"}, nil),
		durations: map[durationKey]*durations{},
	}
	if opts.Registerer != nil {
		var err error
		if c, err = collectors.Register(opts.Registerer, c); err != nil {
			return nil, fmt.Errorf("registering launcher hook metrics: %w", err)
		}
	}
	return &Counters{c: c}, nil
}

// Record adds the counts of data, a report the launcher of vmi wrote
// (api/hookcounts), to the series. Empty data records nothing. A report
// that does not decode, or that names a Plugin the store does not hold,
// is refused whole: nothing of it is recorded, and the error names the
// VMI, the field and the cause.
func (c *Counters) Record(vmi *kubevirtv1.VirtualMachineInstance, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	r, err := hookcounts.Decode(data)
	if err != nil {
		return fmt.Errorf("launcher hook counts of VMI %s: %w", name(vmi), err)
	}
	return c.c.record(vmi, r)
}

func name(vmi *kubevirtv1.VirtualMachineInstance) string {
	if vmi == nil {
		return "(none given)"
	}
	return vmi.Namespace + "/" + vmi.Name
}

// collector holds the series and brings them in line with the Plugins of
// the source before they are gathered.
type collector struct {
	plugins  PluginSource
	outcomes *prometheus.CounterVec
	celLimit *prometheus.CounterVec
	overlaps *prometheus.CounterVec
	// durationDesc describes the histograms of durations, which are
	// rebuilt from the runs the launchers counted per bucket; mu guards
	// durations.
	durationDesc *prometheus.Desc
	durations    map[durationKey]*durations

	// mu orders record and sync: a report checked against one set of
	// Plugins is added before the series of a Plugin deleted since are
	// dropped.
	mu sync.Mutex
	// synced is set once known holds the Plugins of the source at
	// revision and enabled.
	synced   bool
	revision uint64
	enabled  bool
	known    map[string]bool
}

// durationKey is a histogram of durations.
type durationKey struct {
	plugin string
	point  pluginv1alpha1.LauncherHookPoint
}

// durations are the runs of a histogram per bucket of
// hookcounts.DurationBuckets (not cumulative, the last above the last
// bound), and their total seconds.
type durations struct {
	runs    []uint64
	seconds float64
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	c.outcomes.Describe(ch)
	c.celLimit.Describe(ch)
	c.overlaps.Describe(ch)
	ch <- c.durationDesc
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	// A store not synced yet keeps the series as they are.
	_, _ = c.sync()
	histograms := make([]prometheus.Metric, 0, len(c.durations))
	for k, d := range c.durations {
		cumulative := make(map[float64]uint64, len(hookcounts.DurationBuckets))
		var count uint64
		for i, bound := range hookcounts.DurationBuckets {
			count += d.runs[i]
			cumulative[bound] = count
		}
		count += d.runs[len(hookcounts.DurationBuckets)]
		histograms = append(histograms, prometheus.MustNewConstHistogram(c.durationDesc, count, d.seconds, cumulative, k.plugin, string(k.point)))
	}
	c.mu.Unlock()
	c.outcomes.Collect(ch)
	c.celLimit.Collect(ch)
	c.overlaps.Collect(ch)
	for _, h := range histograms {
		ch <- h
	}
}

// sync brings the series in line with the Plugins of the source when they
// changed since the last time, and returns the names of those Plugins;
// c.mu is held.
func (c *collector) sync() (map[string]bool, error) {
	snap, err := c.plugins.Snapshot()
	if err != nil {
		return nil, err
	}
	if c.synced && snap.Revision == c.revision && snap.Enabled == c.enabled {
		return c.known, nil
	}
	known := make(map[string]bool, len(snap.Plugins))
	for _, p := range snap.Plugins {
		known[p.Name] = true
		// A series that does not exist yet is made at 0, so that the
		// first count of a Plugin is an increase Prometheus sees (see the
		// package documentation, "Series follow the Plugins").
		for _, point := range declaredPoints(p) {
			for _, o := range hookresult.Outcomes {
				c.outcomes.WithLabelValues(p.Name, string(point), string(o))
			}
			c.celLimit.WithLabelValues(p.Name, string(point))
			c.histogram(durationKey{p.Name, point})
		}
	}
	for p := range c.known {
		if !known[p] {
			c.outcomes.DeletePartialMatch(prometheus.Labels{"plugin": p})
			c.celLimit.DeletePartialMatch(prometheus.Labels{"plugin": p})
			c.overlaps.DeletePartialMatch(prometheus.Labels{"plugin": p})
			c.overlaps.DeletePartialMatch(prometheus.Labels{"overwritten_plugin": p})
			for k := range c.durations {
				if k.plugin == p {
					delete(c.durations, k)
				}
			}
		}
	}
	c.synced, c.revision, c.enabled, c.known = true, snap.Revision, snap.Enabled, known
	return known, nil
}

// declaredPoints are the launcher hook points p's hooks handle.
func declaredPoints(p *pluginv1alpha1.Plugin) []pluginv1alpha1.LauncherHookPoint {
	var out []pluginv1alpha1.LauncherHookPoint
	for _, point := range pluginv1alpha1.LauncherHookPoints {
		if slices.ContainsFunc(p.Spec.LauncherHooks, func(h pluginv1alpha1.LauncherHook) bool { return h.Handles(point) }) {
			out = append(out, point)
		}
	}
	return out
}

// record checks that r names only Plugins of the source, then adds it.
func (c *collector) record(vmi *kubevirtv1.VirtualMachineInstance, r *hookcounts.Report) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	known, err := c.sync()
	if err != nil {
		return fmt.Errorf("launcher hook counts of VMI %s: reading the Plugins: %w", name(vmi), err)
	}
	if !c.enabled && !r.Empty() {
		return fmt.Errorf("launcher hook counts of VMI %s: the Plugins feature gate is off, no Plugin is known", name(vmi))
	}
	if err := checkKnown(r, known); err != nil {
		return fmt.Errorf("launcher hook counts of VMI %s: %w", name(vmi), err)
	}
	for _, o := range r.Outcomes {
		c.outcomes.WithLabelValues(o.Plugin, string(o.HookPoint), string(o.Outcome)).Add(float64(o.Count))
	}
	for _, s := range r.CELCostLimitExceeded {
		c.celLimit.WithLabelValues(s.Plugin, string(s.HookPoint)).Add(float64(s.Count))
	}
	for _, o := range r.Overlaps {
		c.overlaps.WithLabelValues(string(o.HookPoint), o.Plugin, o.OverwrittenPlugin).Add(float64(o.Count))
	}
	for _, d := range r.Durations {
		h := c.histogram(durationKey{d.Plugin, d.HookPoint})
		for i, n := range d.Runs {
			h.runs[i] += uint64(n)
		}
		h.seconds += d.Seconds
	}
	return nil
}

// histogram returns the runs of k, made empty if there were none; c.mu is
// held.
func (c *collector) histogram(k durationKey) *durations {
	h := c.durations[k]
	if h == nil {
		h = &durations{runs: make([]uint64, len(hookcounts.DurationBuckets)+1)}
		c.durations[k] = h
	}
	return h
}

// checkKnown checks that every plugin r names is known, naming the first
// field that names another.
func checkKnown(r *hookcounts.Report, known map[string]bool) error {
	unknown := func(field string, i int, plugin string) error {
		return fmt.Errorf("%s[%d].plugin: %q is not a Plugin virt-handler knows", field, i, plugin)
	}
	for i, o := range r.Outcomes {
		if !known[o.Plugin] {
			return unknown("outcomes", i, o.Plugin)
		}
	}
	for i, s := range r.CELCostLimitExceeded {
		if !known[s.Plugin] {
			return unknown("celCostLimitExceeded", i, s.Plugin)
		}
	}
	for i, d := range r.Durations {
		if !known[d.Plugin] {
			return unknown("durations", i, d.Plugin)
		}
	}
	for i, o := range r.Overlaps {
		if !known[o.Plugin] {
			return unknown("overlaps", i, o.Plugin)
		}
		if !known[o.OverwrittenPlugin] {
			return fmt.Errorf("overlaps[%d].overwrittenPlugin: %q is not a Plugin virt-handler knows", i, o.OverwrittenPlugin)
		}
	}
	return nil
}
