// SPDX-License-Identifier: Apache-2.0

package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kubevirt-plugins/framework/api/hookresult"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// outcomes lists the report's hooks as "plugin#index kind outcome".
func outcomes(r *pipeline.Report) []string {
	var out []string
	for _, h := range r.Hooks {
		out = append(out, fmt.Sprintf("%s#%d %s %s", h.Plugin, h.HookIndex, h.Kind, h.Outcome))
	}
	return out
}

// TestReportGivesEveryHookItsOutcomeAndDuration: a report per hook point
// call, against real gRPC sidecars (one failing), names each hook that
// handles the point with its plugin, index, kind, outcome (applied,
// skipped by condition, failed and ignored, failed) and duration; a
// failed hook carries its *HookError.
func TestReportGivesEveryHookItsOutcomeAndDuration(t *testing.T) {
	root := socketRoot(t)
	plugins := []pluginv1alpha1.Plugin{
		plugin("a-cel", celHook(`Domain{Title: "a"}`), withCondition(celHook(`Domain{Title: "never"}`), `vmi.Name == "other"`)),
		plugin("b-flaky", ignore(sidecarHook(serve(t, root, "b-flaky", "hook.sock", failingPreBoot("disk full")), gd, pb))),
		plugin("c-good", sidecarHook(serve(t, root, "c-good", "hook.sock", &sidecar{}), gd, pb)),
	}
	p := newPipeline(t, root, plugins)
	_, reports, err := p.BootWithReport(t.Context(), testVMI(t), testDomain(t), pipeline.Artifacts{})
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) != 2 || reports[0].HookPoint != gd || reports[1].HookPoint != pb {
		t.Fatalf("reports for %d hook points, want GuestDefinition then PreBoot", len(reports))
	}
	wantGD := []string{"a-cel#0 cel success", "a-cel#1 cel skipped", "b-flaky#0 sidecar success", "c-good#0 sidecar success"}
	if got := outcomes(reports[0]); !slices.Equal(got, wantGD) {
		t.Errorf("GuestDefinition hooks %q, want %q", got, wantGD)
	}
	wantPB := []string{"b-flaky#0 sidecar ignored", "c-good#0 sidecar success"}
	if got := outcomes(reports[1]); !slices.Equal(got, wantPB) {
		t.Errorf("PreBoot hooks %q, want %q", got, wantPB)
	}
	for _, r := range reports {
		for _, h := range r.Hooks {
			if (h.Outcome == pipeline.OutcomeSkipped) != (h.Duration == 0) {
				t.Errorf("%s#%d %s took %s: only a skipped hook has no duration", h.Plugin, h.HookIndex, h.Outcome, h.Duration)
			}
		}
	}
	failed := reports[1].Failed()
	if len(failed) != 1 {
		t.Fatalf("failed hooks %v, want b-flaky's", failed)
	}
	herr, ok := errors.AsType[*pipeline.HookError](failed[0].Err)
	if !ok || herr.Plugin != "b-flaky" || herr.HookPoint != pb || !strings.Contains(herr.Error(), "disk full") {
		t.Errorf("failed hook's error %v, want b-flaky's *HookError at PreBoot with the sidecar's message", failed[0].Err)
	}
}

// A call that fails returns its report too: the failed hook is the last,
// with its error; hooks after it do not appear.
func TestReportOfAFailedCallEndsWithTheFailure(t *testing.T) {
	root := socketRoot(t)
	plugins := []pluginv1alpha1.Plugin{
		plugin("a-strict", sidecarHook(serve(t, root, "a-strict", "hook.sock", failingPreBoot("no space")), pb)),
		plugin("b-after", sidecarHook(serve(t, root, "b-after", "hook.sock", &sidecar{}), pb)),
	}
	p := newPipeline(t, root, plugins)
	report, err := p.PreBootWithReport(t.Context(), testVMI(t), pipeline.Artifacts{})
	if err == nil {
		t.Fatal("PreBoot with a failing hook under Fail succeeded")
	}
	if got, want := outcomes(report), []string{"a-strict#0 sidecar error"}; !slices.Equal(got, want) {
		t.Errorf("hooks %q, want %q", got, want)
	}
	if report.Hooks[0].Err == nil || report.Hooks[0].Err.Error() != err.Error() {
		t.Errorf("failed hook's error %v, want the call's %v", report.Hooks[0].Err, err)
	}
}

// A plugin condition that cannot be evaluated is an entry of its own.
func TestReportNamesAPluginConditionThatCannotBeEvaluated(t *testing.T) {
	root := socketRoot(t)
	pl := plugin("a-cond", sidecarHook(serve(t, root, "a-cond", "hook.sock", &sidecar{}), pms))
	pl.Spec.Condition = `vmi.Labels["absent"] == "x"`
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{pl})
	_, report, err := p.PreMigrationSourceWithReport(t.Context(), testVMI(t), 1, nil)
	if err == nil {
		t.Fatal("a condition that cannot be evaluated did not fail the call")
	}
	if len(report.Hooks) != 1 || report.Hooks[0].HookIndex != pipeline.PluginCondition || report.Hooks[0].Outcome != pipeline.OutcomeError {
		t.Errorf("hooks %+v, want one plugin condition entry with outcome error", report.Hooks)
	}
	if report.Hooks[0].Scope != hookresult.ScopePlugin {
		t.Errorf("plugin condition entry has scope %s, want plugin", report.Hooks[0].Scope)
	}
	data, err := json.Marshal(report)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"scope":"plugin"`) {
		t.Errorf("the report's JSON does not name the scope: %s", data)
	}
}

// The report is a value the host passes on: it encodes to JSON with the
// error text and the duration readable.
func TestReportEncodesToJSONForTheHostToPassOn(t *testing.T) {
	root := socketRoot(t)
	plugins := []pluginv1alpha1.Plugin{
		plugin("a", celHook(`Domain{Title: "a"}`)),
		plugin("b", celHook(`Domain{Title: "b"}`), ignore(celHook(`Domain{Title: vmi.Labels["absent"]}`))),
	}
	p := newPipeline(t, root, plugins)
	_, report, err := p.GuestDefinitionWithReport(t.Context(), testVMI(t), testDomain(t), pipeline.Boot)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(report)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		HookPoint string `json:"hookPoint"`
		Hooks     []struct {
			Plugin, Kind, Outcome, Duration, Error string
			HookIndex                              int
			Written                                []string
		} `json:"hooks"`
		Overlaps []struct {
			Path        string
			Hook        struct{ Plugin string }
			Overwritten struct{ Plugin string }
		} `json:"overlaps"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	t.Log(string(b))
	if back.HookPoint != "GuestDefinition" || len(back.Hooks) != 3 || back.Hooks[2].Outcome != "ignored" ||
		!strings.Contains(back.Hooks[2].Error, `plugin "b" launcher hook #1 (cel)`) || back.Hooks[1].Duration == "" ||
		!slices.Equal(back.Hooks[1].Written, []string{"Title"}) {
		t.Errorf("JSON %s lacks the hooks' outcomes, errors, durations or written paths", b)
	}
	if len(back.Overlaps) != 1 || back.Overlaps[0].Path != "Title" || back.Overlaps[0].Hook.Plugin != "b" || back.Overlaps[0].Overwritten.Plugin != "a" {
		t.Errorf("JSON overlaps %+v, want b over a at Title", back.Overlaps)
	}
}

// A sidecar's answer found not to decode after its call returned (the chain
// decodes only when it needs to) is that hook's failure in the report too.
func TestReportCountsAnAnswerThatDoesNotDecodeAsTheHooksFailure(t *testing.T) {
	root := socketRoot(t)
	s := &sidecar{guestDefinition: func(context.Context, *hooksv1alpha1.GuestDefinitionRequest) (*hooksv1alpha1.GuestDefinitionResponse, error) {
		return &hooksv1alpha1.GuestDefinitionResponse{DomainXml: []byte(`<domain type="kvm"><name>default_web-01</name><uuid>5b1d8a6e-2f43-4c9a-9a0e-7d3c1e2f4a10</uuid><memory unit="KiB">lots</memory></domain>`)}, nil
	}}
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{
		plugin("a-first", celHook(celAppend("first"))),
		plugin("b-last", ignore(sidecarHook(serve(t, root, "b-last", "hook.sock", s), gd))),
	})
	_, report, err := p.GuestDefinitionWithReport(t.Context(), testVMI(t), testDomain(t), pipeline.Boot)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := outcomes(report), []string{"a-first#0 cel success", "b-last#0 sidecar ignored"}; !slices.Equal(got, want) {
		t.Errorf("hooks %q, want %q", got, want)
	}
	if e := report.Hooks[1].Err; e == nil || !strings.Contains(e.Error(), "invalid domain XML") {
		t.Errorf("b-last's error %v, want the decoding failure", e)
	}
}
