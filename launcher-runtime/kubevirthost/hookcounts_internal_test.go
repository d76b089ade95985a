// SPDX-License-Identifier: Apache-2.0

package kubevirthost

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/kubevirt-plugins/framework/api/hookcounts"
	"github.com/kubevirt-plugins/framework/api/hookresult"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
)

// counted is a run skipped by its condition: one series, no time.
func counted(plugin string) pipeline.CountedOutcome {
	return pipeline.CountedOutcome{Plugin: plugin, HookPoint: pluginv1alpha1.PreBoot, Outcome: hookresult.Skipped}
}

// takeAll decodes one take, failing on a report the handler would refuse.
func takeAll(t *testing.T, h *hookCounts) *hookcounts.Report {
	t.Helper()
	data := h.take()
	if data == nil {
		return nil
	}
	if len(data) > hookcounts.MaxSize {
		t.Fatalf("a report of %d bytes, more than hookcounts.MaxSize", len(data))
	}
	r, err := hookcounts.Decode(data)
	if err != nil {
		t.Fatalf("the report does not decode: %v", err)
	}
	return r
}

// A host that never takes the counts does not make the launcher grow: at
// most hookcounts.MaxEntries series are kept, the ones beyond are logged
// once and dropped.
func TestHookCountsKeepAtMostMaxEntriesSeries(t *testing.T) {
	var lines []string
	h := &hookCounts{log: funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})}
	for i := range hookcounts.MaxEntries + 10 {
		h.add(counted(fmt.Sprintf("p%04d", i)))
	}
	h.add(counted("p0000"))
	r := takeAll(t, h)
	if n := len(r.Outcomes); n != hookcounts.MaxEntries {
		t.Fatalf("%d series handed out, want hookcounts.MaxEntries (%d)", n, hookcounts.MaxEntries)
	}
	if r.Outcomes[0].Plugin != "p0000" || r.Outcomes[0].Count != 2 {
		t.Errorf("a series already kept is still counted: %+v", r.Outcomes[0])
	}
	if len(lines) != 1 || !strings.Contains(lines[0], `"plugin"="p0512"`) {
		t.Errorf("logged %q, want one line naming the first series dropped", lines)
	}
	if data := h.take(); data != nil {
		t.Errorf("the dropped series were kept: %s", data)
	}
}

// A count stops at hookcounts.MaxCount, which the handler accepts.
func TestACountStopsAtMaxCount(t *testing.T) {
	h := &hookCounts{}
	h.add(pipeline.CountedOutcome{Plugin: "p", HookPoint: pluginv1alpha1.GuestDefinition, Outcome: hookresult.Error, CELCostLimitExceeded: true})
	h.outcomes[outcomeKey{"p", pluginv1alpha1.GuestDefinition, hookresult.Error}] = hookcounts.MaxCount - 1
	h.celLimit[celKey{"p", pluginv1alpha1.GuestDefinition}] = hookcounts.MaxCount - 1
	for range 3 {
		h.add(pipeline.CountedOutcome{Plugin: "p", HookPoint: pluginv1alpha1.GuestDefinition, Outcome: hookresult.Error, CELCostLimitExceeded: true})
	}
	r := takeAll(t, h)
	if r.Outcomes[0].Count != hookcounts.MaxCount || r.CELCostLimitExceeded[0].Count != hookcounts.MaxCount {
		t.Errorf("counts %d and %d, want both hookcounts.MaxCount", r.Outcomes[0].Count, r.CELCostLimitExceeded[0].Count)
	}
}

// Series that would make a report larger than hookcounts.MaxSize wait for
// the next take: none is lost, no report is refused for its size.
func TestSeriesThatDoNotFitWaitForTheNextReport(t *testing.T) {
	h := &hookCounts{}
	long := strings.Repeat("x", 2000)
	const n = hookcounts.MaxEntries / 5 // five series each
	for i := range n {
		plugin := fmt.Sprintf("%03d%s", i, long)
		h.add(counted(plugin))
		h.add(pipeline.CountedOutcome{Plugin: plugin, HookPoint: pluginv1alpha1.GuestDefinition, Outcome: hookresult.Ignored, CELCostLimitExceeded: true, Took: time.Millisecond})
		h.addOverlap(pipeline.CountedOverlap{HookPoint: pluginv1alpha1.GuestDefinition, Plugin: plugin, OverwrittenPlugin: "a"})
	}
	outcomes, stops, timed, overlaps, reports := 0, 0, 0, 0, 0
	for r := takeAll(t, h); r != nil; r = takeAll(t, h) {
		reports++
		outcomes += len(r.Outcomes)
		stops += len(r.CELCostLimitExceeded)
		timed += len(r.Durations)
		overlaps += len(r.Overlaps)
	}
	if outcomes != 2*n || stops != n || timed != n || overlaps != n {
		t.Errorf("handed out %d outcome, %d cost-limit, %d duration and %d overlap series, want %d, %d, %d and %d", outcomes, stops, timed, overlaps, 2*n, n, n, n)
	}
	if reports < 4 {
		t.Errorf("%d reports for some %d KiB of series, want the series spread over at least 4", reports, 5*n*2)
	}
}

// A timed run is counted in the first bucket whose bound is at least its
// time, as the pipeline's histogram counts it, and its time is added up.
func TestARunsTimeGoesToTheBucketOfItsBound(t *testing.T) {
	h := &hookCounts{}
	for _, took := range []time.Duration{0, 500 * time.Microsecond, 501 * time.Microsecond, 60 * time.Second, time.Hour} {
		h.add(pipeline.CountedOutcome{Plugin: "p", HookPoint: pluginv1alpha1.PreBoot, Outcome: hookresult.Success, Took: took})
	}
	h.add(pipeline.CountedOutcome{Plugin: "p", HookPoint: pluginv1alpha1.PreBoot, Outcome: hookresult.Skipped})
	r := takeAll(t, h)
	want := make([]int64, len(hookcounts.DurationBuckets)+1)
	want[0] = 2                                 // 0 and exactly the first bound
	want[1] = 1                                 // just above it
	want[len(hookcounts.DurationBuckets)-1] = 1 // exactly the last bound
	want[len(hookcounts.DurationBuckets)] = 1   // above every bound
	if len(r.Durations) != 1 || !reflect.DeepEqual(r.Durations[0].Runs, want) {
		t.Fatalf("durations = %+v, want runs %v (the skipped run not timed)", r.Durations, want)
	}
	if s, wantS := r.Durations[0].Seconds, 3660.001001; s < wantS-1e-6 || s > wantS+1e-6 {
		t.Errorf("seconds = %v, want %v", s, wantS)
	}
}

// The runs of one duration series stop at hookcounts.MaxCount, which the
// handler accepts, and overlaps are bounded as the other series are.
func TestTimedRunsAndOverlapsStopAtMaxCount(t *testing.T) {
	h := &hookCounts{}
	run := pipeline.CountedOutcome{Plugin: "p", HookPoint: pluginv1alpha1.GuestDefinition, Outcome: hookresult.Success, Took: time.Millisecond}
	o := pipeline.CountedOverlap{HookPoint: pluginv1alpha1.GuestDefinition, Plugin: "p", OverwrittenPlugin: "q"}
	h.add(run)
	h.addOverlap(o)
	h.durations[celKey{"p", pluginv1alpha1.GuestDefinition}].Runs[1] = hookcounts.MaxCount - 1
	h.overlaps[overlapKey{pluginv1alpha1.GuestDefinition, "p", "q"}] = hookcounts.MaxCount - 1
	for range 3 {
		h.add(run)
		h.addOverlap(o)
	}
	r := takeAll(t, h)
	if n := r.Durations[0].Total(); n != hookcounts.MaxCount {
		t.Errorf("%d timed runs, want hookcounts.MaxCount", n)
	}
	if n := r.Overlaps[0].Count; n != hookcounts.MaxCount {
		t.Errorf("%d overlaps, want hookcounts.MaxCount", n)
	}
}
