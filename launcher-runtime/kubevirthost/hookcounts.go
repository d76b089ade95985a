// SPDX-License-Identifier: Apache-2.0

package kubevirthost

import (
	"cmp"
	"encoding/json"
	"maps"
	"slices"
	"sort"
	"sync"

	"github.com/go-logr/logr"

	"github.com/kubevirt-plugins/framework/api/hookcounts"
	"github.com/kubevirt-plugins/framework/api/hookresult"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
)

// TakeHookCounts hands out, once, what the launcher hooks did since the
// last call: how many runs ended with each outcome (success, skipped,
// ignored, error) per plugin and hook point, how many evaluations of a
// plugin's CEL the cost limit stopped, how long the runs took, and how
// often a plugin's GuestDefinition hook changed what another's had, as an
// api/hookcounts report. These are the counts of the pipeline's outcome,
// cost-limit, duration and overlap metrics (Options.Registerer set or
// not), which Prometheus cannot scrape in virt-launcher's Pod. It returns
// nil when there is nothing to report.
//
// virt-launcher sends the bytes, unread, to virt-handler after each call
// of a hook point method (with the reply of the command that ran it, as
// it hands over Ignored), and virt-handler passes them to
// handler-runtime/kubevirthost's Handler.RecordLauncherHookCounts. Counts
// taken and lost on the way are lost: the host sends what it took.
//
// Between two calls the launcher keeps at most hookcounts.MaxEntries
// series and counts each up to hookcounts.MaxCount (a series beyond them
// is not counted, and that is logged); a report is at most
// hookcounts.MaxSize bytes, and series that would not fit wait for the
// next call. A host that calls it after every hook point call never
// reaches those bounds.
//
// A host whose one channel to virt-handler carries Events, as KubeVirt's
// does, sends the bytes as the message of a Normal Event of reason
// HookCountsReason on the VMI.
func (l *Launcher) TakeHookCounts() []byte {
	return l.counts.take()
}

// HookCountsReason is the reason of the Event that carries TakeHookCounts'
// report to virt-handler, whose recorder takes it out
// (handler-runtime/kubevirthost's Handler.LauncherReports).
const HookCountsReason = hookcounts.EventReason

// outcomeKey is a series of the outcome metric.
type outcomeKey struct {
	plugin  string
	point   pluginv1alpha1.LauncherHookPoint
	outcome hookresult.Outcome
}

func (k outcomeKey) keysAndValues() []any {
	return []any{hookresult.KeyPlugin, k.plugin, hookresult.KeyHookPoint, k.point, hookresult.KeyOutcome, k.outcome}
}

func (k outcomeKey) compare(o outcomeKey) int {
	return cmp.Or(cmp.Compare(k.plugin, o.plugin), cmp.Compare(k.point, o.point), cmp.Compare(k.outcome, o.outcome))
}

// celKey is a series of the cost-limit metric.
type celKey struct {
	plugin string
	point  pluginv1alpha1.LauncherHookPoint
}

func (k celKey) keysAndValues() []any {
	return []any{hookresult.KeyPlugin, k.plugin, hookresult.KeyHookPoint, k.point}
}

func (k celKey) compare(o celKey) int {
	return cmp.Or(cmp.Compare(k.plugin, o.plugin), cmp.Compare(k.point, o.point))
}

// overlapKey is a series of the overlap metric.
type overlapKey struct {
	point                 pluginv1alpha1.LauncherHookPoint
	plugin, overwrittenBy string
}

func (k overlapKey) keysAndValues() []any {
	return []any{hookresult.KeyHookPoint, k.point, hookresult.KeyPlugin, k.plugin, "overwrittenPlugin", k.overwrittenBy}
}

func (k overlapKey) compare(o overlapKey) int {
	return cmp.Or(cmp.Compare(k.point, o.point), cmp.Compare(k.plugin, o.plugin), cmp.Compare(k.overwrittenBy, o.overwrittenBy))
}

// seriesKey is outcomeKey, celKey or overlapKey.
type seriesKey[K any] interface {
	comparable
	keysAndValues() []any
	// compare orders the series of a report.
	compare(K) int
}

// hookCounts adds up, between two takes, the counts the pipelines hand
// Options.OnOutcome. It has its own lock: the pipeline calls add while the
// Launcher's is held by the hook point call, and a take need not wait for
// a call to end.
type hookCounts struct {
	log logr.Logger

	mu        sync.Mutex
	outcomes  map[outcomeKey]int64
	celLimit  map[celKey]int64
	durations map[celKey]*hookcounts.DurationCount
	overlaps  map[overlapKey]int64
	// overflowLogged is set once a count was dropped since the last take,
	// so that it is logged once.
	overflowLogged bool
}

// init makes the maps; h.mu is held.
func (h *hookCounts) init() {
	if h.outcomes == nil {
		h.outcomes, h.celLimit = map[outcomeKey]int64{}, map[celKey]int64{}
		h.durations, h.overlaps = map[celKey]*hookcounts.DurationCount{}, map[overlapKey]int64{}
	}
}

// entries is the number of series kept; h.mu is held.
func (h *hookCounts) entries() int {
	return len(h.outcomes) + len(h.celLimit) + len(h.durations) + len(h.overlaps)
}

// add counts c.
func (h *hookCounts) add(c pipeline.CountedOutcome) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.init()
	addBounded(h, h.outcomes, outcomeKey{c.Plugin, c.HookPoint, c.Outcome})
	if c.CELCostLimitExceeded {
		addBounded(h, h.celLimit, celKey{c.Plugin, c.HookPoint})
	}
	if c.Timed() {
		h.addDuration(celKey{c.Plugin, c.HookPoint}, c.Took.Seconds())
	}
}

// addOverlap counts o.
func (h *hookCounts) addOverlap(o pipeline.CountedOverlap) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.init()
	addBounded(h, h.overlaps, overlapKey{o.HookPoint, o.Plugin, o.OverwrittenPlugin})
}

// addDuration counts a run of k that took seconds in its bucket, within
// the bounds of a report; h.mu is held.
func (h *hookCounts) addDuration(k celKey, seconds float64) {
	d, ok := h.durations[k]
	switch {
	case !ok && h.entries() >= hookcounts.MaxEntries:
		h.overflow("a launcher hook run's time was not counted: the launcher keeps at most hookcounts.MaxEntries series between two reports to virt-handler", k.keysAndValues())
		return
	case !ok:
		d = &hookcounts.DurationCount{Plugin: k.plugin, HookPoint: k.point, Runs: make([]int64, len(hookcounts.DurationBuckets)+1)}
		h.durations[k] = d
	}
	if d.Total() >= hookcounts.MaxCount {
		h.overflow("a launcher hook run's time was not counted: the series reached hookcounts.MaxCount since the last report to virt-handler", k.keysAndValues())
		return
	}
	// The first bucket whose bound is at least seconds, as Prometheus's
	// histograms count; past the last bound, the last element.
	d.Runs[sort.SearchFloat64s(hookcounts.DurationBuckets, seconds)]++
	d.Seconds += max(seconds, 0)
}

// addBounded adds one to m[k] within the bounds of a report; h.mu is held.
func addBounded[K seriesKey[K]](h *hookCounts, m map[K]int64, k K) {
	n, ok := m[k]
	switch {
	case !ok && h.entries() >= hookcounts.MaxEntries:
		h.overflow("a launcher hook series was not counted: the launcher keeps at most hookcounts.MaxEntries series between two reports to virt-handler", k.keysAndValues())
	case n >= hookcounts.MaxCount:
		h.overflow("a launcher hook run was not counted: the series reached hookcounts.MaxCount since the last report to virt-handler", k.keysAndValues())
	default:
		m[k] = n + 1
	}
}

func (h *hookCounts) overflow(msg string, kv []any) {
	if h.overflowLogged {
		return
	}
	h.overflowLogged = true
	h.log.Error(nil, msg, append(kv, "maxEntries", hookcounts.MaxEntries, "maxCount", hookcounts.MaxCount)...)
}

// reportOverhead is more than what a report adds to its entries: the
// version, the four list names, brackets and commas.
const reportOverhead = 128

// take returns the counts as a report and forgets them, but those that
// would make the report larger than hookcounts.MaxSize.
func (h *hookCounts) take() []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.entries() == 0 {
		return nil
	}
	r := hookcounts.Report{Version: hookcounts.Version}
	size := reportOverhead
	// fits reports whether an entry still fits in the report.
	fits := func(entry any) bool {
		b, err := json.Marshal(entry)
		if err != nil || size+len(b)+1 > hookcounts.MaxSize {
			return false
		}
		size += len(b) + 1
		return true
	}
	r.Outcomes = drain(h.outcomes, fits, func(k outcomeKey, n int64) hookcounts.OutcomeCount {
		return hookcounts.OutcomeCount{Plugin: k.plugin, HookPoint: k.point, Outcome: k.outcome, Count: n}
	})
	r.CELCostLimitExceeded = drain(h.celLimit, fits, func(k celKey, n int64) hookcounts.CELCostLimitCount {
		return hookcounts.CELCostLimitCount{Plugin: k.plugin, HookPoint: k.point, Count: n}
	})
	r.Durations = drain(h.durations, fits, func(_ celKey, d *hookcounts.DurationCount) hookcounts.DurationCount { return *d })
	r.Overlaps = drain(h.overlaps, fits, func(k overlapKey, n int64) hookcounts.OverlapCount {
		return hookcounts.OverlapCount{HookPoint: k.point, Plugin: k.plugin, OverwrittenPlugin: k.overwrittenBy, Count: n}
	})
	h.overflowLogged = false
	if r.Empty() {
		return nil
	}
	data, err := json.Marshal(r)
	if err != nil {
		// Strings and integers always encode.
		h.log.Error(err, "encoding the launcher hook counts")
		return nil
	}
	return data
}

// drain moves the series of m, in the order of their keys, into report
// entries while they fit, and leaves in m those that do not.
func drain[K seriesKey[K], V, E any](m map[K]V, fits func(any) bool, entry func(K, V) E) []E {
	var out []E
	for _, k := range slices.SortedFunc(maps.Keys(m), K.compare) {
		if e := entry(k, m[k]); fits(e) {
			out = append(out, e)
			delete(m, k)
		}
	}
	return out
}
