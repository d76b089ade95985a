// SPDX-License-Identifier: Apache-2.0

package kubevirthost_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
	"time"

	"google.golang.org/grpc"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubevirt-plugins/framework/api/hookcounts"
	"github.com/kubevirt-plugins/framework/api/hookresult"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/kubevirthost"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// takeCounts decodes what TakeHookCounts hands out, nil for nothing.
func takeCounts(t *testing.T, l *kubevirthost.Launcher) *hookcounts.Report {
	t.Helper()
	data := l.TakeHookCounts()
	if data == nil {
		return nil
	}
	r, err := hookcounts.Decode(data)
	if err != nil {
		t.Fatalf("TakeHookCounts handed out %s, which does not decode: %v", data, err)
	}
	return r
}

func outcome(plugin string, point pluginv1alpha1.LauncherHookPoint, o hookresult.Outcome, n int64) hookcounts.OutcomeCount {
	return hookcounts.OutcomeCount{Plugin: plugin, HookPoint: point, Outcome: o, Count: n}
}

// timed takes the durations out of r, after checking them against the
// runs r counts: one entry per plugin and hook point whose runs were not
// skipped, with as many runs, and for a single run the bucket of its time.
// It returns the timed runs per "plugin/hookPoint".
func timed(t *testing.T, r *hookcounts.Report) map[string]int64 {
	t.Helper()
	if r == nil {
		return nil
	}
	wantRuns := map[string]int64{}
	for _, o := range r.Outcomes {
		if o.Outcome != hookresult.Skipped {
			wantRuns[o.Plugin+"/"+string(o.HookPoint)] += o.Count
		}
	}
	got := map[string]int64{}
	for _, d := range r.Durations {
		got[d.Plugin+"/"+string(d.HookPoint)] = d.Total()
		if d.Total() == 1 && d.Runs[sort.SearchFloat64s(hookcounts.DurationBuckets, d.Seconds)] != 1 {
			t.Errorf("durations of %s/%s: one run of %v s counted in the wrong bucket: %v", d.Plugin, d.HookPoint, d.Seconds, d.Runs)
		}
	}
	if !reflect.DeepEqual(got, wantRuns) {
		t.Errorf("timed runs %v, want %v (every run but the skipped ones)", got, wantRuns)
	}
	r.Durations = nil
	return got
}

// What the hooks did is handed out once, as deltas, for virt-handler's
// metrics: every outcome per plugin and hook point, with no Registerer set
// and across a change of Plugins; nothing at all when nothing ran.
func TestHookCountsAreHandedOutOnceWithoutARegisterer(t *testing.T) {
	root := t.TempDir()
	for _, dir := range []string{"late", "broken"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	l := kubevirthost.New(kubevirthost.Options{Pipeline: pipeline.Options{SocketRoot: root, SocketWaitBudget: 100 * time.Millisecond}})
	defer l.Close()
	if data := l.TakeHookCounts(); data != nil {
		t.Fatalf("TakeHookCounts before any Plugin = %s, want nil", data)
	}
	if err := l.SetPlugins(handed(t,
		celPlugin("cpu-tuning", `Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`),
		sidecarPlugin("late", pluginv1alpha1.PreBoot, pluginv1alpha1.Ignore),
	)); err != nil {
		t.Fatal(err)
	}
	if data := l.TakeHookCounts(); data != nil {
		t.Fatalf("TakeHookCounts before any hook point call = %s, want nil", data)
	}
	untuned := vmi()
	delete(untuned.Labels, "tuning")
	for _, v := range []*kubevirtv1.VirtualMachineInstance{vmi(), vmi(), untuned} {
		if _, _, err := l.GuestDefinition(t.Context(), v, domainXML); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.PreBoot(t.Context(), vmi(), ""); err != nil {
		t.Fatal(err)
	}
	want := &hookcounts.Report{Version: hookcounts.Version, Outcomes: []hookcounts.OutcomeCount{
		outcome("cpu-tuning", pluginv1alpha1.GuestDefinition, hookresult.Skipped, 1),
		outcome("cpu-tuning", pluginv1alpha1.GuestDefinition, hookresult.Success, 2),
		outcome("late", pluginv1alpha1.PreBoot, hookresult.Ignored, 1),
	}}
	got := takeCounts(t, l)
	if runs := timed(t, got); len(runs) != 2 {
		t.Errorf("timed runs %v, want cpu-tuning's and late's", runs)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("TakeHookCounts = %+v, want %+v", got, want)
	}
	if data := l.TakeHookCounts(); data != nil {
		t.Fatalf("TakeHookCounts a second time = %s, want nil (handed out once)", data)
	}

	// A PreBoot under Ignore, then new Plugins whose sidecar fails under
	// Fail: both counts are handed out, the replaced pipeline's too.
	if _, err := l.PreBoot(t.Context(), vmi(), ""); err != nil {
		t.Fatal(err)
	}
	if err := l.SetPlugins(handed(t, sidecarPlugin("broken", pluginv1alpha1.PreBoot, pluginv1alpha1.Fail))); err != nil {
		t.Fatal(err)
	}
	if _, err := l.PreBoot(t.Context(), vmi(), ""); err == nil {
		t.Fatal("PreBoot under Fail with no sidecar succeeded")
	}
	want = &hookcounts.Report{Version: hookcounts.Version, Outcomes: []hookcounts.OutcomeCount{
		outcome("broken", pluginv1alpha1.PreBoot, hookresult.Error, 1),
		outcome("late", pluginv1alpha1.PreBoot, hookresult.Ignored, 1),
	}}
	got = takeCounts(t, l)
	timed(t, got)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("TakeHookCounts after new Plugins = %+v, want %+v", got, want)
	}
}

// A condition the CEL cost limit stops is a failure of the hook and a
// cost-limit stop, both handed out.
func TestHookCountsCarryTheCELCostLimitStops(t *testing.T) {
	l := kubevirthost.New(kubevirthost.Options{})
	defer l.Close()
	walker := celPlugin("label-walker", `Domain{CPU: DomainCPU{Mode: "custom"}}`)
	walker.Spec.LauncherHooks[0].Condition = `vmi.Labels.all(a, vmi.Labels.all(b, size(a) + size(b) > 0))`
	if err := l.SetPlugins(handed(t, walker)); err != nil {
		t.Fatal(err)
	}
	huge := vmi()
	for i := range 5000 {
		huge.Labels[fmt.Sprintf("owner.example.org/l%d", i)] = "v"
	}
	if _, _, err := l.GuestDefinition(t.Context(), huge, domainXML); err == nil {
		t.Fatal("a condition over 5,000 labels was not stopped")
	}
	want := &hookcounts.Report{
		Version:              hookcounts.Version,
		Outcomes:             []hookcounts.OutcomeCount{outcome("label-walker", pluginv1alpha1.GuestDefinition, hookresult.Error, 1)},
		CELCostLimitExceeded: []hookcounts.CELCostLimitCount{{Plugin: "label-walker", HookPoint: pluginv1alpha1.GuestDefinition, Count: 1}},
	}
	got := takeCounts(t, l)
	timed(t, got)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("TakeHookCounts = %+v, want %+v", got, want)
	}
}

// A host's own Options.Pipeline.OnOutcome still receives every count.
func TestTheHostsOnOutcomeStillReceivesTheCounts(t *testing.T) {
	var got []pipeline.CountedOutcome
	l := kubevirthost.New(kubevirthost.Options{Pipeline: pipeline.Options{OnOutcome: func(c pipeline.CountedOutcome) { got = append(got, c) }}})
	defer l.Close()
	if err := l.SetPlugins(handed(t, celPlugin("cpu-tuning", `Domain{CPU: DomainCPU{Mode: "custom"}}`))); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.GuestDefinition(t.Context(), vmi(), domainXML); err != nil {
		t.Fatal(err)
	}
	want := []pipeline.CountedOutcome{{Plugin: "cpu-tuning", HookPoint: pluginv1alpha1.GuestDefinition, Outcome: hookresult.Success}}
	if len(got) == 1 && got[0].Took <= 0 {
		t.Errorf("the host's OnOutcome received a run of %v, want its time", got[0].Took)
	}
	for i := range got {
		got[i].Took = 0
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the host's OnOutcome received %+v, want %+v", got, want)
	}
	if r := takeCounts(t, l); r == nil || len(r.Outcomes) != 1 {
		t.Errorf("TakeHookCounts = %+v, want the one success", r)
	}
}

// takingSidecar is a PreBoot sidecar that calls TakeHookCounts while the
// Launcher runs the PreBoot that called it.
type takingSidecar struct {
	hooksv1alpha1.UnimplementedLauncherHookServiceServer
	l    *kubevirthost.Launcher
	took chan []byte
}

func (s *takingSidecar) PreBoot(ctx context.Context, _ *hooksv1alpha1.PreBootRequest) (*hooksv1alpha1.PreBootResponse, error) {
	done := make(chan []byte, 1)
	go func() { done <- s.l.TakeHookCounts() }()
	select {
	case data := <-done:
		s.took <- data
		return &hooksv1alpha1.PreBootResponse{}, nil
	case <-time.After(5 * time.Second):
		return nil, fmt.Errorf("TakeHookCounts waited for the hook point call")
	}
}

// The host may take the counts from another goroutine while a hook point
// call runs (a sidecar can take its 30 seconds): TakeHookCounts does not
// wait for the call.
func TestTakeHookCountsDoesNotWaitForAHookPointCall(t *testing.T) {
	root, err := os.MkdirTemp("", "kvp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	if err := os.MkdirAll(filepath.Join(root, "taker"), 0o755); err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("unix", filepath.Join(root, "taker", "hooks.sock"))
	if err != nil {
		t.Fatal(err)
	}
	l := kubevirthost.New(kubevirthost.Options{Pipeline: pipeline.Options{SocketRoot: root}})
	defer l.Close()
	s := &takingSidecar{l: l, took: make(chan []byte, 1)}
	srv := grpc.NewServer()
	hooksv1alpha1.RegisterLauncherHookServiceServer(srv, s)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)

	if err := l.SetPlugins(handed(t, celPlugin("cpu-tuning", `Domain{CPU: DomainCPU{Mode: "custom"}}`),
		sidecarPlugin("taker", pluginv1alpha1.PreBoot, pluginv1alpha1.Fail))); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.GuestDefinition(t.Context(), vmi(), domainXML); err != nil {
		t.Fatal(err)
	}
	if _, err := l.PreBoot(t.Context(), vmi(), ""); err != nil {
		t.Fatal(err)
	}
	r, err := hookcounts.Decode(<-s.took)
	if err != nil || len(r.Outcomes) != 1 || r.Outcomes[0] != outcome("cpu-tuning", pluginv1alpha1.GuestDefinition, hookresult.Success, 1) {
		t.Errorf("taken during PreBoot: %+v, %v; want GuestDefinition's success", r, err)
	}
	want := &hookcounts.Report{Version: hookcounts.Version, Outcomes: []hookcounts.OutcomeCount{
		outcome("taker", pluginv1alpha1.PreBoot, hookresult.Success, 1)}}
	got := takeCounts(t, l)
	timed(t, got)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("taken after PreBoot: %+v, want %+v", got, want)
	}
}

// Two plugins' GuestDefinition hooks changing the same part of the domain
// are an overlap, handed out with the plugin whose value was kept; the
// host's own OnOverlap receives it too.
func TestHookCountsCarryTheOverlaps(t *testing.T) {
	var hostGot []pipeline.CountedOverlap
	l := kubevirthost.New(kubevirthost.Options{Pipeline: pipeline.Options{OnOverlap: func(o pipeline.CountedOverlap) { hostGot = append(hostGot, o) }}})
	defer l.Close()
	if err := l.SetPlugins(handed(t,
		celPlugin("first", `Domain{CPU: DomainCPU{Mode: "custom"}}`),
		celPlugin("second", `Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`),
	)); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, _, err := l.GuestDefinition(t.Context(), vmi(), domainXML); err != nil {
			t.Fatal(err)
		}
	}
	got := takeCounts(t, l)
	want := []hookcounts.OverlapCount{{HookPoint: pluginv1alpha1.GuestDefinition, Plugin: "second", OverwrittenPlugin: "first", Count: 2}}
	if got == nil || !reflect.DeepEqual(got.Overlaps, want) {
		t.Fatalf("overlaps handed out: %+v, want %+v", got, want)
	}
	wantHost := pipeline.CountedOverlap{HookPoint: pluginv1alpha1.GuestDefinition, Plugin: "second", OverwrittenPlugin: "first"}
	if len(hostGot) != 2 || hostGot[0] != wantHost || hostGot[1] != wantHost {
		t.Errorf("the host's OnOverlap received %+v, want %+v twice", hostGot, wantHost)
	}
}
