// SPDX-License-Identifier: Apache-2.0

package hookcounts_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/kubevirt-plugins/framework/api/hookcounts"
	"github.com/kubevirt-plugins/framework/api/hookresult"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

func TestAReportReadsBackAsWritten(t *testing.T) {
	want := &hookcounts.Report{
		Version: hookcounts.Version,
		Outcomes: []hookcounts.OutcomeCount{
			{Plugin: "cpu-tuning", HookPoint: pluginv1alpha1.GuestDefinition, Outcome: hookresult.Success, Count: 2},
			{Plugin: "late", HookPoint: pluginv1alpha1.PreBoot, Outcome: hookresult.Ignored, Count: hookcounts.MaxCount},
		},
		CELCostLimitExceeded: []hookcounts.CELCostLimitCount{
			{Plugin: "label-walker", HookPoint: pluginv1alpha1.GuestDefinition, Count: 1},
		},
		Durations: []hookcounts.DurationCount{
			{Plugin: "cpu-tuning", HookPoint: pluginv1alpha1.GuestDefinition, Runs: runs(0, 2, 1), Seconds: 0.0042},
		},
		Overlaps: []hookcounts.OverlapCount{
			{HookPoint: pluginv1alpha1.GuestDefinition, Plugin: "late", OverwrittenPlugin: "cpu-tuning", Count: 3},
		},
	}
	data, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := hookcounts.Decode(data)
	if err != nil {
		t.Fatalf("Decode(%s): %v", data, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Decode(%s) = %+v, want %+v", data, got, want)
	}
	if empty := (&hookcounts.Report{Version: hookcounts.Version}); !empty.Empty() || got.Empty() {
		t.Error("Empty does not tell a report that counts nothing")
	}
	if n := got.Durations[0].Total(); n != 3 {
		t.Errorf("Total() = %d, want 3", n)
	}
}

// runs is a durations entry's runs per bucket: the first elements as
// given, the others 0.
func runs(first ...int64) []int64 {
	r := make([]int64, len(hookcounts.DurationBuckets)+1)
	copy(r, first)
	return r
}

// The wire format is what the two runtimes, released apart, agree on: its
// field names are fixed.
func TestTheWireFormatsFieldNames(t *testing.T) {
	got, err := hookcounts.Decode([]byte(`{"version":1,
		"outcomes":[{"plugin":"p","hookPoint":"PreMigrationSource","outcome":"error","count":3}],
		"celCostLimitExceeded":[{"plugin":"p","hookPoint":"PreBoot","count":4}],
		"durations":[{"plugin":"p","hookPoint":"PreBoot","runs":[0,0,0,0,0,0,0,0,0,0,0,0,2],"seconds":150.5}],
		"overlaps":[{"hookPoint":"GuestDefinition","plugin":"p","overwrittenPlugin":"q","count":5}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if o := got.Outcomes; len(o) != 1 || o[0] != (hookcounts.OutcomeCount{Plugin: "p", HookPoint: pluginv1alpha1.PreMigrationSource, Outcome: hookresult.Error, Count: 3}) {
		t.Errorf("outcomes = %+v", o)
	}
	if c := got.CELCostLimitExceeded; len(c) != 1 || c[0] != (hookcounts.CELCostLimitCount{Plugin: "p", HookPoint: pluginv1alpha1.PreBoot, Count: 4}) {
		t.Errorf("celCostLimitExceeded = %+v", c)
	}
	if d := got.Durations; len(d) != 1 || !reflect.DeepEqual(d[0], hookcounts.DurationCount{Plugin: "p", HookPoint: pluginv1alpha1.PreBoot, Runs: runs(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2), Seconds: 150.5}) {
		t.Errorf("durations = %+v", d)
	}
	if o := got.Overlaps; len(o) != 1 || o[0] != (hookcounts.OverlapCount{HookPoint: pluginv1alpha1.GuestDefinition, Plugin: "p", OverwrittenPlugin: "q", Count: 5}) {
		t.Errorf("overlaps = %+v", o)
	}
}

// A report comes from the launcher, which is trusted less than the reader:
// anything but a well-formed report of this version is refused, with an
// error naming the field.
func TestDecodeRefusesWhatALauncherMustNotSend(t *testing.T) {
	entry := func(plugin, point, outcome string, count any) string {
		return fmt.Sprintf(`{"plugin":%q,"hookPoint":%q,"outcome":%q,"count":%v}`, plugin, point, outcome, count)
	}
	report := func(outcomes ...string) string {
		return `{"version":1,"outcomes":[` + strings.Join(outcomes, ",") + `]}`
	}
	ok := entry("p", "PreBoot", "success", 1)
	many := make([]string, hookcounts.MaxEntries+1)
	for i := range many {
		many[i] = entry(fmt.Sprintf("p%d", i), "PreBoot", "success", 1)
	}
	for _, c := range []struct {
		name, data, want string
	}{
		{"larger than MaxSize", report(ok) + strings.Repeat(" ", hookcounts.MaxSize), "larger than"},
		{"not JSON", `version 1`, "not a launcher hook counts report"},
		{"not an object", `[1]`, "not a launcher hook counts report"},
		{"data after the object", report(ok) + `{}`, "after top-level value"},
		{"an unknown field", `{"version":1,"extra":true}`, `unknown field "extra"`},
		{"an unknown field of an entry", `{"version":1,"outcomes":[{"plugin":"p","hookPoint":"PreBoot","outcome":"success","count":1,"vmi":"x"}]}`, `unknown field "vmi"`},
		{"no version", `{"outcomes":[` + ok + `]}`, "version: missing"},
		{"a later version", `{"version":2,"outcomes":[` + ok + `],"newField":1}`, "version: 2 is not 1"},
		{"version 0", `{"version":0}`, "version: 0 is not 1"},
		{"too many entries", report(many...), fmt.Sprintf("%d entries, more than %d", hookcounts.MaxEntries+1, hookcounts.MaxEntries)},
		{"no plugin", report(entry("", "PreBoot", "success", 1)), "outcomes[0].plugin: empty"},
		{"a node hook point", report(ok, entry("p", "PreVMStart", "success", 1)), `outcomes[1].hookPoint: "PreVMStart" is not a launcher hook point (GuestDefinition, PreBoot, PreMigrationSource)`},
		{"a node outcome", report(entry("p", "PreBoot", "timeout", 1)), `outcomes[0].outcome: "timeout" is not one of success, skipped, ignored, error`},
		{"count 0", report(entry("p", "PreBoot", "success", 0)), "outcomes[0].count: 0 is not between 1 and"},
		{"a negative count", report(entry("p", "PreBoot", "error", -5)), "outcomes[0].count: -5 is not between 1 and"},
		{"an absurd count", report(entry("p", "PreBoot", "error", hookcounts.MaxCount+1)), fmt.Sprintf("outcomes[0].count: %d is not between 1 and %d", hookcounts.MaxCount+1, hookcounts.MaxCount)},
		{"a count that is not an integer", report(entry("p", "PreBoot", "error", 1.5)), "count"},
		{"the same outcome twice", report(ok, entry("q", "PreBoot", "success", 1), ok), `outcomes[2]: plugin "p", hook point PreBoot, outcome success counted twice`},
		{"a CEL stop at a node hook point", `{"version":1,"celCostLimitExceeded":[{"plugin":"p","hookPoint":"OnVMStop","count":1}]}`, `celCostLimitExceeded[0].hookPoint: "OnVMStop" is not a launcher hook point`},
		{"a CEL stop with a negative count", `{"version":1,"celCostLimitExceeded":[{"plugin":"p","hookPoint":"PreBoot","count":-1}]}`, "celCostLimitExceeded[0].count: -1 is not between 1 and"},
		{"a CEL stop with no plugin", `{"version":1,"celCostLimitExceeded":[{"hookPoint":"PreBoot","count":1}]}`, "celCostLimitExceeded[0].plugin: empty"},
		{"the same CEL stop twice", `{"version":1,"celCostLimitExceeded":[{"plugin":"p","hookPoint":"PreBoot","count":1},{"plugin":"p","hookPoint":"PreBoot","count":2}]}`, `celCostLimitExceeded[1]: plugin "p", hook point PreBoot counted twice`},
		{"durations with a bucket missing", `{"version":1,"durations":[{"plugin":"p","hookPoint":"PreBoot","runs":[1],"seconds":1}]}`, "durations[0].runs: 1 buckets, not 13"},
		{"durations with a negative bucket", `{"version":1,"durations":[{"plugin":"p","hookPoint":"PreBoot","runs":[2,-1,0,0,0,0,0,0,0,0,0,0,0],"seconds":1}]}`, "durations[0].runs[1]: -1 is not between 0 and"},
		{"durations of no run", `{"version":1,"durations":[{"plugin":"p","hookPoint":"PreBoot","runs":[0,0,0,0,0,0,0,0,0,0,0,0,0],"seconds":0}]}`, "durations[0].runs: 0 runs in all, not between 1 and"},
		{"durations of too many runs", fmt.Sprintf(`{"version":1,"durations":[{"plugin":"p","hookPoint":"PreBoot","runs":[%d,1,0,0,0,0,0,0,0,0,0,0,0],"seconds":0}]}`, hookcounts.MaxCount), fmt.Sprintf("durations[0].runs: %d runs in all, not between 1 and %d", hookcounts.MaxCount+1, hookcounts.MaxCount)},
		{"negative seconds", `{"version":1,"durations":[{"plugin":"p","hookPoint":"PreBoot","runs":[1,0,0,0,0,0,0,0,0,0,0,0,0],"seconds":-0.5}]}`, "durations[0].seconds: -0.5 is not between 0 and 86400 per run (1 runs)"},
		{"more than a day per run", `{"version":1,"durations":[{"plugin":"p","hookPoint":"PreBoot","runs":[0,0,0,0,0,0,0,0,0,0,0,0,2],"seconds":172801}]}`, "durations[0].seconds: 172801 is not between 0 and 86400 per run (2 runs)"},
		{"durations at a node hook point", `{"version":1,"durations":[{"plugin":"p","hookPoint":"PostVMStart","runs":[1,0,0,0,0,0,0,0,0,0,0,0,0],"seconds":0}]}`, `durations[0].hookPoint: "PostVMStart" is not a launcher hook point`},
		{"durations with no plugin", `{"version":1,"durations":[{"hookPoint":"PreBoot","runs":[1,0,0,0,0,0,0,0,0,0,0,0,0],"seconds":0}]}`, "durations[0].plugin: empty"},
		{"the same durations twice", `{"version":1,"durations":[{"plugin":"p","hookPoint":"PreBoot","runs":[1,0,0,0,0,0,0,0,0,0,0,0,0],"seconds":0},{"plugin":"p","hookPoint":"PreBoot","runs":[1,0,0,0,0,0,0,0,0,0,0,0,0],"seconds":0}]}`, `durations[1]: plugin "p", hook point PreBoot counted twice`},
		{"an overlap with no overwritten plugin", `{"version":1,"overlaps":[{"hookPoint":"GuestDefinition","plugin":"p","count":1}]}`, "overlaps[0].overwrittenPlugin: empty"},
		{"an overlap of a plugin with itself", `{"version":1,"overlaps":[{"hookPoint":"GuestDefinition","plugin":"p","overwrittenPlugin":"p","count":1}]}`, `overlaps[0].overwrittenPlugin: "p" is the plugin itself`},
		{"an overlap with count 0", `{"version":1,"overlaps":[{"hookPoint":"GuestDefinition","plugin":"p","overwrittenPlugin":"q","count":0}]}`, "overlaps[0].count: 0 is not between 1 and"},
		{"an overlap at a node hook point", `{"version":1,"overlaps":[{"hookPoint":"PreVMStart","plugin":"p","overwrittenPlugin":"q","count":1}]}`, `overlaps[0].hookPoint: "PreVMStart" is not a launcher hook point`},
		{"the same overlap twice", `{"version":1,"overlaps":[{"hookPoint":"GuestDefinition","plugin":"p","overwrittenPlugin":"q","count":1},{"hookPoint":"GuestDefinition","plugin":"p","overwrittenPlugin":"q","count":1}]}`, `overlaps[1]: hook point GuestDefinition, plugin "p" over "q" counted twice`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := hookcounts.Decode([]byte(c.data))
			if err == nil {
				t.Fatalf("Decode accepted it: %+v", r)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not say %q", err, c.want)
			}
		})
	}
}

// The bounds leave room for the largest report a launcher writes: MaxEntries
// entries of the largest kind, durations with every bucket near MaxCount,
// of plugins with the longest name a Plugin can have.
func TestTheLargestReportALauncherWritesFitsMaxSize(t *testing.T) {
	r := hookcounts.Report{Version: hookcounts.Version}
	name := strings.Repeat("a", 253)
	full := make([]int64, len(hookcounts.DurationBuckets)+1)
	for j := range full {
		full[j] = hookcounts.MaxCount / int64(len(full))
	}
	for i := range hookcounts.MaxEntries {
		r.Durations = append(r.Durations, hookcounts.DurationCount{Plugin: fmt.Sprintf("%d%s", i, name[4:]), HookPoint: pluginv1alpha1.PreMigrationSource,
			Runs: full, Seconds: 1234567.123456789})
	}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > hookcounts.MaxSize {
		t.Fatalf("%d entries encode to %d bytes, more than MaxSize (%d)", hookcounts.MaxEntries, len(data), hookcounts.MaxSize)
	}
	if _, err := hookcounts.Decode(data); err != nil {
		t.Fatal(err)
	}
}

// Validate, which a writer may call before sending, refuses what Decode
// refuses but for the size, another version included.
func TestValidateRefusesAReportOfAnotherVersion(t *testing.T) {
	r := &hookcounts.Report{Outcomes: []hookcounts.OutcomeCount{{Plugin: "p", HookPoint: pluginv1alpha1.PreBoot, Outcome: hookresult.Success, Count: 1}}}
	if err := r.Validate(); err == nil || !strings.Contains(err.Error(), "version: 0 is not 1") {
		t.Fatalf("Validate of a report of version 0: %v", err)
	}
	r.Version = hookcounts.Version
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
}
