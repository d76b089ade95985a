// SPDX-License-Identifier: Apache-2.0

package hookcounts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/kubevirt-plugins/framework/api/hookresult"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

// Version is the version of the format this package writes and reads.
const Version = 1

// EventReason is the reason of the Event that carries a report when the
// host's only channel from virt-launcher to virt-handler is the one for
// Events, as in KubeVirt (its launcher-to-handler notifier): the launcher
// sends the report as the message of a Normal Event of this reason on the
// VMI, and virt-handler's recorder, wrapped by handler-runtime's
// Handler.LauncherReports, records the counts instead of sending the Event
// to the API server.
const EventReason = "KubeVirtPluginsLauncherHookCounts"

// Bounds of a report. A launcher that reports after each of its hook
// point calls stays far below them: one call adds at most twice
// pluginv1alpha1.MaxHooks to a plugin's counts (a sidecar whose answer
// fails to decode is counted a success, then a failure), and a VM is
// handed a few Plugins.
const (
	// MaxSize bounds the encoded report, in bytes.
	MaxSize = 256 << 10
	// MaxEntries bounds the entries of a report, its four lists
	// together: three hook points and six series each (four outcomes,
	// the cost-limit stops and the durations) for 28 plugins, and room
	// for their overlaps.
	MaxEntries = 512
	// MaxCount bounds the count of one entry, and the runs of one
	// durations entry.
	MaxCount = 1 << 20
	// MaxRunSeconds bounds the mean time of the runs of a durations
	// entry: a day, far beyond any hook's timeout.
	MaxRunSeconds = 24 * 60 * 60
)

// DurationBuckets are the upper bounds, in seconds, of the buckets of the
// launcher hook duration histogram,
// kubevirt_plugins_launcher_hook_duration_seconds{plugin,hook_point}: the
// launcher's pipeline observes into them and a report carries its runs per
// bucket, so that virt-handler rebuilds the same histogram.
var DurationBuckets = []float64{.0005, .001, .005, .01, .05, .1, .5, 1, 5, 10, 30, 60}

// Report is what a launcher's hooks did since its previous report.
type Report struct {
	// Version is the format's version, Version.
	Version int `json:"version"`
	// Outcomes are the runs of launcher hooks per plugin, hook point and
	// outcome.
	Outcomes []OutcomeCount `json:"outcomes,omitempty"`
	// CELCostLimitExceeded are the evaluations of a plugin's CEL (its
	// conditions, its GuestDefinition expressions) the CEL cost limit
	// stopped, per plugin and hook point.
	CELCostLimitExceeded []CELCostLimitCount `json:"celCostLimitExceeded,omitempty"`
	// Durations are how long the runs of launcher hooks took, per plugin
	// and hook point; runs skipped by their condition are not timed.
	Durations []DurationCount `json:"durations,omitempty"`
	// Overlaps are the parts of the domain a plugin's GuestDefinition
	// hook changed after another plugin's had in the same call, per hook
	// point and pair of plugins.
	Overlaps []OverlapCount `json:"overlaps,omitempty"`
}

// OutcomeCount is how many runs of a plugin's hooks at a hook point ended
// with an outcome.
type OutcomeCount struct {
	Plugin    string                           `json:"plugin"`
	HookPoint pluginv1alpha1.LauncherHookPoint `json:"hookPoint"`
	Outcome   hookresult.Outcome               `json:"outcome"`
	// Count is at least 1 and at most MaxCount.
	Count int64 `json:"count"`
}

// CELCostLimitCount is how many evaluations of a plugin's CEL at a hook
// point the CEL cost limit stopped.
type CELCostLimitCount struct {
	Plugin    string                           `json:"plugin"`
	HookPoint pluginv1alpha1.LauncherHookPoint `json:"hookPoint"`
	// Count is at least 1 and at most MaxCount.
	Count int64 `json:"count"`
}

// DurationCount is how long the timed runs of a plugin's hooks at a hook
// point took: Runs[i] runs took at most DurationBuckets[i] seconds and
// more than the bound before it, and the last element counts those that
// took longer than the last bound. Seconds is their total time.
type DurationCount struct {
	Plugin    string                           `json:"plugin"`
	HookPoint pluginv1alpha1.LauncherHookPoint `json:"hookPoint"`
	// Runs has len(DurationBuckets)+1 elements, each at least 0, and
	// adds up to at least 1 and at most MaxCount.
	Runs []int64 `json:"runs"`
	// Seconds is at least 0 and at most MaxRunSeconds per run.
	Seconds float64 `json:"seconds"`
}

// Total is the number of runs d counts.
func (d *DurationCount) Total() int64 {
	var n int64
	for _, r := range d.Runs {
		n += r
	}
	return n
}

// OverlapCount is how many parts of the domain a GuestDefinition hook of
// Plugin changed after a hook of OverwrittenPlugin had, in calls at a
// hook point; Plugin's value was kept.
type OverlapCount struct {
	HookPoint         pluginv1alpha1.LauncherHookPoint `json:"hookPoint"`
	Plugin            string                           `json:"plugin"`
	OverwrittenPlugin string                           `json:"overwrittenPlugin"`
	// Count is at least 1 and at most MaxCount.
	Count int64 `json:"count"`
}

// Empty reports whether r counts nothing.
func (r *Report) Empty() bool {
	return len(r.Outcomes) == 0 && len(r.CELCostLimitExceeded) == 0 && len(r.Durations) == 0 && len(r.Overlaps) == 0
}

// Decode reads a report and checks it (Validate). Its errors name the
// field at fault: "outcomes[2].hookPoint: ...".
func Decode(data []byte) (*Report, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("report of %d bytes: larger than %d", len(data), MaxSize)
	}
	// The version first, read leniently: a report of another version may
	// have fields this one does not know, and saying that its version is
	// not this one is the useful answer.
	// json.Unmarshal also refuses data after the object.
	var v struct {
		Version *json.RawMessage `json:"version"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("not a launcher hook counts report: %w", err)
	}
	if v.Version == nil {
		return nil, errors.New("version: missing")
	}
	if s := string(*v.Version); s != fmt.Sprint(Version) {
		return nil, fmt.Errorf("version: %s is not %d, the only version this reader knows", s, Version)
	}
	r := &Report{}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(r); err != nil {
		return nil, fmt.Errorf("not a launcher hook counts report: %w", err)
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return r, nil
}

// Validate checks r as Decode does, but for its size.
func (r *Report) Validate() error {
	if r.Version != Version {
		return fmt.Errorf("version: %d is not %d, the only version this reader knows", r.Version, Version)
	}
	if n := len(r.Outcomes) + len(r.CELCostLimitExceeded) + len(r.Durations) + len(r.Overlaps); n > MaxEntries {
		return fmt.Errorf("outcomes, celCostLimitExceeded, durations and overlaps: %d entries, more than %d", n, MaxEntries)
	}
	seen := make(map[OutcomeCount]bool, len(r.Outcomes))
	for i, o := range r.Outcomes {
		field := fmt.Sprintf("outcomes[%d]", i)
		if err := checkEntry(field, o.Plugin, o.HookPoint, o.Count); err != nil {
			return err
		}
		if !slices.Contains(hookresult.Outcomes, o.Outcome) {
			return fmt.Errorf("%s.outcome: %q is not one of %s", field, o.Outcome, list(hookresult.Outcomes))
		}
		key := OutcomeCount{Plugin: o.Plugin, HookPoint: o.HookPoint, Outcome: o.Outcome}
		if seen[key] {
			return fmt.Errorf("%s: plugin %q, hook point %s, outcome %s counted twice", field, o.Plugin, o.HookPoint, o.Outcome)
		}
		seen[key] = true
	}
	seenCEL := make(map[CELCostLimitCount]bool, len(r.CELCostLimitExceeded))
	for i, c := range r.CELCostLimitExceeded {
		field := fmt.Sprintf("celCostLimitExceeded[%d]", i)
		if err := checkEntry(field, c.Plugin, c.HookPoint, c.Count); err != nil {
			return err
		}
		key := CELCostLimitCount{Plugin: c.Plugin, HookPoint: c.HookPoint}
		if seenCEL[key] {
			return fmt.Errorf("%s: plugin %q, hook point %s counted twice", field, c.Plugin, c.HookPoint)
		}
		seenCEL[key] = true
	}
	seenDur := make(map[CELCostLimitCount]bool, len(r.Durations))
	for i := range r.Durations {
		d := &r.Durations[i]
		field := fmt.Sprintf("durations[%d]", i)
		if err := checkDuration(field, d); err != nil {
			return err
		}
		key := CELCostLimitCount{Plugin: d.Plugin, HookPoint: d.HookPoint}
		if seenDur[key] {
			return fmt.Errorf("%s: plugin %q, hook point %s counted twice", field, d.Plugin, d.HookPoint)
		}
		seenDur[key] = true
	}
	seenOverlap := make(map[OverlapCount]bool, len(r.Overlaps))
	for i, o := range r.Overlaps {
		field := fmt.Sprintf("overlaps[%d]", i)
		if err := checkEntry(field, o.Plugin, o.HookPoint, o.Count); err != nil {
			return err
		}
		switch o.OverwrittenPlugin {
		case "":
			return fmt.Errorf("%s.overwrittenPlugin: empty", field)
		case o.Plugin:
			return fmt.Errorf("%s.overwrittenPlugin: %q is the plugin itself; only hooks of two plugins overlap", field, o.Plugin)
		}
		key := OverlapCount{HookPoint: o.HookPoint, Plugin: o.Plugin, OverwrittenPlugin: o.OverwrittenPlugin}
		if seenOverlap[key] {
			return fmt.Errorf("%s: hook point %s, plugin %q over %q counted twice", field, o.HookPoint, o.Plugin, o.OverwrittenPlugin)
		}
		seenOverlap[key] = true
	}
	return nil
}

// checkDuration checks a durations entry.
func checkDuration(field string, d *DurationCount) error {
	if err := checkSeries(field, d.Plugin, d.HookPoint); err != nil {
		return err
	}
	if len(d.Runs) != len(DurationBuckets)+1 {
		return fmt.Errorf("%s.runs: %d buckets, not %d (the bounds of DurationBuckets and one above them)", field, len(d.Runs), len(DurationBuckets)+1)
	}
	for j, n := range d.Runs {
		if n < 0 || n > MaxCount {
			return fmt.Errorf("%s.runs[%d]: %d is not between 0 and %d", field, j, n, MaxCount)
		}
	}
	total := d.Total()
	if total < 1 || total > MaxCount {
		return fmt.Errorf("%s.runs: %d runs in all, not between 1 and %d", field, total, MaxCount)
	}
	if s := d.Seconds; math.IsNaN(s) || s < 0 || s > float64(total)*MaxRunSeconds {
		return fmt.Errorf("%s.seconds: %v is not between 0 and %d per run (%d runs)", field, s, MaxRunSeconds, total)
	}
	return nil
}

// checkSeries checks what every entry has: a plugin and a launcher hook
// point.
func checkSeries(field, plugin string, point pluginv1alpha1.LauncherHookPoint) error {
	if plugin == "" {
		return fmt.Errorf("%s.plugin: empty", field)
	}
	if !slices.Contains(pluginv1alpha1.LauncherHookPoints, point) {
		return fmt.Errorf("%s.hookPoint: %q is not a launcher hook point (%s)", field, point, list(pluginv1alpha1.LauncherHookPoints))
	}
	return nil
}

// checkEntry checks an entry with a count: outcomes,
// celCostLimitExceeded and overlaps.
func checkEntry(field, plugin string, point pluginv1alpha1.LauncherHookPoint, count int64) error {
	if err := checkSeries(field, plugin, point); err != nil {
		return err
	}
	if count < 1 || count > MaxCount {
		return fmt.Errorf("%s.count: %d is not between 1 and %d", field, count, MaxCount)
	}
	return nil
}

func list[S ~string](values []S) string {
	s := make([]string, len(values))
	for i, v := range values {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}
