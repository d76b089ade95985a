// SPDX-License-Identifier: Apache-2.0

package pipeline_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/internal/fakeclock"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

const pb = pluginv1alpha1.PreBoot

func failingPreBoot(msg string) *sidecar {
	return &sidecar{preBoot: func(context.Context, *hooksv1alpha1.PreBootRequest) (*hooksv1alpha1.PreBootResponse, error) {
		return nil, status.Error(codes.Internal, msg)
	}}
}

func TestConditionsPluginThenHookBothMustHold(t *testing.T) {
	for _, tc := range []struct {
		name            string
		pluginCondition string
		hookCondition   string
		wantRun         bool
	}{
		{"BothHold", `"app" in vmi.Labels`, `vmi.Labels["example.com/tuning"] == "cpu"`, true},
		{"PluginFalse", `"absent" in vmi.Labels`, `vmi.Labels["example.com/tuning"] == "cpu"`, false},
		{"HookFalse", `"app" in vmi.Labels`, `vmi.Labels["example.com/tuning"] == "memory"`, false},
		{"NoConditions", "", "", true},
		{"OnlyHookFalse", "", `vmi.Name == "other"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := socketRoot(t)
			s := &sidecar{}
			pl := plugin("cond",
				withCondition(sidecarHook(serve(t, root, "cond", "hook.sock", s), pb), tc.hookCondition),
				withCondition(celHook(celAppend("cel")), tc.hookCondition))
			pl.Spec.Condition = tc.pluginCondition
			p := newPipeline(t, root, []pluginv1alpha1.Plugin{pl})
			if err := p.PreBoot(t.Context(), testVMI(t), pipeline.Artifacts{}); err != nil {
				t.Fatal(err)
			}
			out, err := p.GuestDefinition(t.Context(), testVMI(t), testDomain(t), pipeline.Boot)
			if err != nil {
				t.Fatal(err)
			}
			if ran := s.calls() == 1; ran != tc.wantRun {
				t.Errorf("sidecar hook ran: %v, want %v", ran, tc.wantRun)
			}
			if ran := out.Description == "cel"; ran != tc.wantRun {
				t.Errorf("CEL hook ran: %v, want %v", ran, tc.wantRun)
			}
		})
	}
}

func TestConditionErrorFailsWhateverStrategy(t *testing.T) {
	// A missing map key is an evaluation error in CEL, not false.
	const broken = `vmi.Labels["no-such-label"] == "x"`
	for _, tc := range []struct {
		name            string
		pluginCondition string
		hookCondition   string
		wantErr         string
	}{
		{"PluginCondition", broken, "", `plugin "cond" at PreBoot: plugin condition`},
		{"HookCondition", "", broken, `plugin "cond" launcher hook #0 (sidecar) at PreBoot: condition`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := socketRoot(t)
			s := &sidecar{}
			pl := plugin("cond", ignore(withCondition(sidecarHook(serve(t, root, "cond", "hook.sock", s), pb), tc.hookCondition)))
			pl.Spec.Condition = tc.pluginCondition
			pl.Spec.FailureStrategy = pluginv1alpha1.Ignore
			p := newPipeline(t, root, []pluginv1alpha1.Plugin{pl})
			err := p.PreBoot(t.Context(), testVMI(t), pipeline.Artifacts{})
			mustContain(t, err, tc.wantErr, "no-such-label")
			if s.calls() != 0 {
				t.Errorf("sidecar called although its condition failed")
			}
		})
	}
}

func TestFailureStrategyHookOverridesPlugin(t *testing.T) {
	for _, tc := range []struct {
		name           string
		pluginStrategy pluginv1alpha1.FailureStrategy
		hookStrategy   pluginv1alpha1.FailureStrategy
		wantFail       bool
	}{
		{"DefaultIsFail", "", "", true},
		{"PluginIgnore", pluginv1alpha1.Ignore, "", false},
		{"HookIgnoreOverPluginFail", pluginv1alpha1.Fail, pluginv1alpha1.Ignore, false},
		{"HookFailOverPluginIgnore", pluginv1alpha1.Ignore, pluginv1alpha1.Fail, true},
		{"HookIgnoreNoPlugin", "", pluginv1alpha1.Ignore, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := socketRoot(t)
			after := &sidecar{}
			h := sidecarHook(serve(t, root, "strategy", "failing.sock", failingPreBoot("disk full")), pb)
			h.FailureStrategy = tc.hookStrategy
			pl := plugin("strategy", h, sidecarHook(serve(t, root, "strategy", "after.sock", after), pb))
			pl.Spec.FailureStrategy = tc.pluginStrategy
			p := newPipeline(t, root, []pluginv1alpha1.Plugin{pl})
			err := p.PreBoot(t.Context(), testVMI(t), pipeline.Artifacts{})
			if tc.wantFail {
				mustContain(t, err, `plugin "strategy" launcher hook #0 (sidecar) at PreBoot`, "disk full")
				if after.calls() != 0 {
					t.Errorf("the chain went on after a failure under Fail")
				}
				return
			}
			if err != nil {
				t.Fatalf("want the failure ignored, got %v", err)
			}
			if after.calls() != 1 {
				t.Errorf("the hook after an ignored failure did not run")
			}
		})
	}
}

func TestSidecarErrorNamesPluginHookAndPoint(t *testing.T) {
	root := socketRoot(t)
	pl := plugin("named",
		celHook(celAppend("x")),
		sidecarHook(serve(t, root, "named", "hook.sock", failingPreBoot("cannot rewrite the ISO")), pb))
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{pl})
	err := p.PreBoot(t.Context(), testVMI(t), pipeline.Artifacts{})
	mustContain(t, err, `plugin "named" launcher hook #1 (sidecar) at PreBoot: `, "cannot rewrite the ISO")
	if st, ok := status.FromError(err); !ok || st.Code() != codes.Internal {
		t.Errorf("the gRPC status is not wrapped: %v", err)
	}
}

func TestDefaultTimeout30s(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		want    time.Duration
	}{
		{"Default", 0, 30 * time.Second},
		{"FromHook", 10 * time.Second, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := socketRoot(t)
			s := &sidecar{}
			h := sidecarHook(serve(t, root, "timeout", "hook.sock", s), pb)
			if tc.timeout > 0 {
				h = withTimeout(h, tc.timeout)
			}
			p := newPipeline(t, root, []pluginv1alpha1.Plugin{plugin("timeout", h)})
			before := time.Now()
			if err := p.PreBoot(t.Context(), testVMI(t), pipeline.Artifacts{}); err != nil {
				t.Fatal(err)
			}
			after := time.Now()
			if len(s.deadlines) != 1 {
				t.Fatalf("the sidecar saw no deadline")
			}
			// The deadline is set between before and after; gRPC sends it
			// with millisecond-ish precision.
			d := s.deadlines[0]
			if d.Before(before.Add(tc.want-time.Second)) || d.After(after.Add(tc.want+time.Second)) {
				t.Errorf("sidecar deadline is %s after the call started, want about %s", d.Sub(before), tc.want)
			}
		})
	}
}

func TestSidecarHangsPastTimeout(t *testing.T) {
	for _, strategy := range []pluginv1alpha1.FailureStrategy{pluginv1alpha1.Fail, pluginv1alpha1.Ignore} {
		t.Run(string(strategy), func(t *testing.T) {
			root := socketRoot(t)
			released := make(chan error, 1)
			hang := &sidecar{preBoot: func(ctx context.Context, _ *hooksv1alpha1.PreBootRequest) (*hooksv1alpha1.PreBootResponse, error) {
				<-ctx.Done()
				released <- ctx.Err()
				return nil, ctx.Err()
			}}
			after := &sidecar{}
			h := withTimeout(sidecarHook(serve(t, root, "hang", "hang.sock", hang), pb), 200*time.Millisecond)
			h.FailureStrategy = strategy
			p := newPipeline(t, root, []pluginv1alpha1.Plugin{plugin("hang", h, sidecarHook(serve(t, root, "hang", "after.sock", after), pb))})
			err := p.PreBoot(t.Context(), testVMI(t), pipeline.Artifacts{})
			if strategy == pluginv1alpha1.Fail {
				mustContain(t, err, `plugin "hang" launcher hook #0 (sidecar) at PreBoot`, "timeout 200ms")
				if status.Code(err) != codes.DeadlineExceeded {
					t.Errorf("want DeadlineExceeded, got %v", err)
				}
			} else if err != nil || after.calls() != 1 {
				t.Errorf("Ignore: want the chain to go on past the hung hook, got err %v, next hook calls %d", err, after.calls())
			}
			if got := <-released; !errors.Is(got, context.DeadlineExceeded) && !errors.Is(got, context.Canceled) {
				t.Errorf("the hung sidecar's context ended with %v", got)
			}
		})
	}
}

func TestContextCancelledMidChain(t *testing.T) {
	root := socketRoot(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	started := make(chan struct{})
	first := &sidecar{preBoot: func(ctx context.Context, _ *hooksv1alpha1.PreBootRequest) (*hooksv1alpha1.PreBootResponse, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	second := &sidecar{}
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{
		// Ignore does not let the chain go on once the operation is cancelled.
		plugin("a-first", ignore(sidecarHook(serve(t, root, "a-first", "hook.sock", first), pb))),
		plugin("b-second", ignore(sidecarHook(serve(t, root, "b-second", "hook.sock", second), pb))),
	})
	go func() {
		<-started
		cancel()
	}()
	err := p.PreBoot(ctx, testVMI(t), pipeline.Artifacts{})
	mustContain(t, err, `plugin "a-first" launcher hook #0 (sidecar) at PreBoot`)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("want context.Canceled wrapped, got %v", err)
	}
	if second.calls() != 0 {
		t.Errorf("a hook ran after the context was cancelled")
	}
}

func TestCancelledContextStartsNoHook(t *testing.T) {
	root := socketRoot(t)
	s := &sidecar{}
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{plugin("never", sidecarHook(serve(t, root, "never", "hook.sock", s), pb))})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := p.PreBoot(ctx, testVMI(t), pipeline.Artifacts{})
	mustContain(t, err, `plugin "never" launcher hook #0 (sidecar) at PreBoot`, "not started")
	if !errors.Is(err, context.Canceled) || s.calls() != 0 {
		t.Errorf("want no call and context.Canceled, got %d calls, %v", s.calls(), err)
	}
}

func TestSocketNeverAppears(t *testing.T) {
	for _, strategy := range []pluginv1alpha1.FailureStrategy{pluginv1alpha1.Fail, pluginv1alpha1.Ignore} {
		t.Run(string(strategy), func(t *testing.T) {
			root := socketRoot(t)
			after := &sidecar{}
			h := sidecarHook(declared("missing", "hook.sock"), pb)
			h.FailureStrategy = strategy
			p := newPipeline(t, root, []pluginv1alpha1.Plugin{
				plugin("missing", h),
				plugin("present", sidecarHook(serve(t, root, "present", "hook.sock", after), pb)),
			}, func(o *pipeline.Options) { o.SocketWaitBudget = 150 * time.Millisecond })
			err := p.PreBoot(t.Context(), testVMI(t), pipeline.Artifacts{})
			if strategy == pluginv1alpha1.Fail {
				mustContain(t, err, `plugin "missing" launcher hook #0 (sidecar) at PreBoot`, "did not appear within the 150ms socket wait budget")
				return
			}
			if err != nil || after.calls() != 1 {
				t.Errorf("Ignore: want the missing sidecar skipped, got err %v, next hook calls %d", err, after.calls())
			}
		})
	}
}

func TestSocketAppearingDuringWaitIsUsed(t *testing.T) {
	root := socketRoot(t)
	s := &sidecar{}
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{plugin("late", sidecarHook(declared("late", "hook.sock"), pb))},
		func(o *pipeline.Options) { o.SocketWaitBudget = time.Minute })
	done := make(chan error, 1)
	go func() { done <- p.PreBoot(t.Context(), testVMI(t), pipeline.Artifacts{}) }()
	// The pipeline is now waiting (or about to); the sidecar starts late.
	serve(t, root, "late", "hook.sock", s)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s.calls() != 1 {
		t.Errorf("the late sidecar was not called")
	}
}

// TestSharedSocketWaitBudget drives the wait with a fake clock: two missing
// sockets under Ignore share one budget, so the clock advances by the
// budget once, not once per socket, and a third sidecar whose socket exists
// still runs after the budget is spent.
func TestSharedSocketWaitBudget(t *testing.T) {
	root := socketRoot(t)
	clk := fakeclock.New(time.Now())
	present := &sidecar{}
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{
		plugin("a-missing", ignore(sidecarHook(declared("a-missing", "hook.sock"), pb))),
		plugin("b-missing", ignore(sidecarHook(declared("b-missing", "hook.sock"), pb))),
		plugin("c-present", sidecarHook(serve(t, root, "c-present", "hook.sock", present), pb)),
	}, func(o *pipeline.Options) {
		o.Clock = clk
		o.SocketWaitBudget = 0 // the default, 30s
	})
	done := make(chan error, 1)
	go func() { done <- p.PreBoot(t.Context(), testVMI(t), pipeline.Artifacts{}) }()
	var advanced time.Duration
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			if advanced != pluginv1alpha1.SocketWaitBudget {
				t.Errorf("the wait took %s of clock time in total, want the single shared budget %s", advanced, pluginv1alpha1.SocketWaitBudget)
			}
			if present.calls() != 1 {
				t.Errorf("the sidecar whose socket exists did not run after the budget was spent")
			}
			return
		case d := <-clk.Waits():
			clk.Step(d)
			advanced += d
			if advanced > 3*pluginv1alpha1.SocketWaitBudget {
				t.Fatalf("still waiting after %s of clock time", advanced)
			}
		}
	}
}

func TestSocketSymlinkRejectedAtDial(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, root string, s *sidecar)
	}{
		{"SymlinkedPluginDirectory", func(t *testing.T, root string, s *sidecar) {
			serve(t, root, "elsewhere", "hook.sock", s)
			if err := os.Symlink(filepath.Join(root, "elsewhere"), filepath.Join(root, "linked")); err != nil {
				t.Fatal(err)
			}
		}},
		{"SymlinkedSocket", func(t *testing.T, root string, s *sidecar) {
			serve(t, root, "elsewhere", "hook.sock", s)
			if err := os.MkdirAll(filepath.Join(root, "linked"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(root, "elsewhere", "hook.sock"), filepath.Join(root, "linked", "hook.sock")); err != nil {
				t.Fatal(err)
			}
		}},
		{"SymlinkedSubdirectory", func(t *testing.T, root string, s *sidecar) {
			serve(t, root, "linked", "real/hook.sock", s)
			if err := os.Symlink(filepath.Join(root, "linked", "real"), filepath.Join(root, "linked", "sub")); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := socketRoot(t)
			s := &sidecar{}
			tc.setup(t, root, s)
			file := "hook.sock"
			if tc.name == "SymlinkedSubdirectory" {
				file = "sub/hook.sock"
			}
			p := newPipeline(t, root, []pluginv1alpha1.Plugin{plugin("linked", sidecarHook(declared("linked", file), pb))})
			err := p.PreBoot(t.Context(), testVMI(t), pipeline.Artifacts{})
			mustContain(t, err, `plugin "linked" launcher hook #0 (sidecar) at PreBoot`, "is a symlink")
			if s.calls() != 0 {
				t.Errorf("the sidecar behind the symlink was called")
			}
		})
	}
}

func TestSocketRootSymlinkIsResolved(t *testing.T) {
	// On many images /var/run links to /run: the root itself may be a link.
	real := socketRoot(t)
	link := filepath.Join(socketRoot(t), "run")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	s := &sidecar{}
	serve(t, real, "rooted", "hook.sock", s)
	p := newPipeline(t, link, []pluginv1alpha1.Plugin{plugin("rooted", sidecarHook(declared("rooted", "hook.sock"), pb))})
	if err := p.PreBoot(t.Context(), testVMI(t), pipeline.Artifacts{}); err != nil {
		t.Fatal(err)
	}
	if s.calls() != 1 {
		t.Errorf("sidecar not called through a linked sockets root")
	}
}

func TestHooksNotHandlingThePointAreNotCalled(t *testing.T) {
	root := socketRoot(t)
	s := &sidecar{}
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{
		plugin("mixed",
			sidecarHook(serve(t, root, "mixed", "hook.sock", s), pluginv1alpha1.PreMigrationSource),
			// Its socket never appears, but PreBoot must not wait for it.
			sidecarHook(declared("mixed", "absent.sock"), gd)),
	}, func(o *pipeline.Options) { o.SocketWaitBudget = time.Hour })
	if err := p.PreBoot(t.Context(), testVMI(t), pipeline.Artifacts{}); err != nil {
		t.Fatal(err)
	}
	if s.calls() != 0 {
		t.Errorf("a PreMigrationSource-only sidecar was called at PreBoot")
	}
}
