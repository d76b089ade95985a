// SPDX-License-Identifier: Apache-2.0

package kubevirthost

import (
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"

	"github.com/kubevirt-plugins/framework/api/hookcounts"
	"github.com/kubevirt-plugins/framework/api/hookresult"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
)

func counted(plugin string) pipeline.CountedOutcome {
	return pipeline.CountedOutcome{Plugin: plugin, HookPoint: pluginv1alpha1.PreBoot, Outcome: hookresult.Error, CELCostLimitExceeded: false}
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
	const n = hookcounts.MaxEntries / 3 // three series each
	for i := range n {
		h.add(counted(fmt.Sprintf("%03d%s", i, long)))
		h.add(pipeline.CountedOutcome{Plugin: fmt.Sprintf("%03d%s", i, long), HookPoint: pluginv1alpha1.GuestDefinition, Outcome: hookresult.Ignored, CELCostLimitExceeded: true})
	}
	outcomes, stops, reports := 0, 0, 0
	for r := takeAll(t, h); r != nil; r = takeAll(t, h) {
		reports++
		outcomes += len(r.Outcomes)
		stops += len(r.CELCostLimitExceeded)
	}
	if outcomes != 2*n || stops != n {
		t.Errorf("handed out %d outcome and %d cost-limit series, want %d and %d", outcomes, stops, 2*n, n)
	}
	if reports < 3 {
		t.Errorf("%d reports for some %d KiB of series, want the series spread over at least 3", reports, 3*n*2)
	}
}
