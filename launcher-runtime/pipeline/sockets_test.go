// SPDX-License-Identifier: Apache-2.0

package pipeline_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/internal/fakeclock"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// countingListener counts the connections a sidecar accepts.
type countingListener struct {
	net.Listener
	accepted atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// sidecarProcess is one run of a sidecar container on a socket of the
// shared volume: it can stop (as a container that exits), leaving its
// socket file behind as an emptyDir keeps it.
type sidecarProcess struct {
	srv *grpc.Server
	lis *countingListener
}

// start runs s on the socket file at <root>/<plugin>/<file>, replacing a
// socket file left by an earlier run, as a restarting sidecar does.
func start(t testing.TB, root, plugin, file string, s hooksv1alpha1.LauncherHookServiceServer) *sidecarProcess {
	t.Helper()
	path := filepath.Join(root, plugin, file)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	sp := &sidecarProcess{srv: grpc.NewServer(), lis: &countingListener{Listener: l}}
	hooksv1alpha1.RegisterLauncherHookServiceServer(sp.srv, s)
	go func() { _ = sp.srv.Serve(sp.lis) }()
	t.Cleanup(sp.srv.Stop)
	return sp
}

// stepWaits lets the call that done reports wait through n pauses of its
// socket wait, trying the socket again after each, and fails the test if
// the call ends before.
func stepWaits(t *testing.T, clk *fakeclock.Clock, done <-chan error, n int) {
	t.Helper()
	for range n {
		select {
		case err := <-done:
			t.Fatalf("the call ended before the sidecar was back: %v", err)
		case d := <-clk.Waits():
			clk.Step(d)
		}
	}
}

// waitStepping returns the error of the call that done reports, stepping
// clk through every wait of its socket wait until then.
func waitStepping(clk *fakeclock.Clock, done <-chan error) error {
	for {
		select {
		case err := <-done:
			return err
		case d := <-clk.Waits():
			clk.Step(d)
		}
	}
}

// staleSocket leaves a socket file at <root>/<plugin>/<file> that nothing
// listens on: what a sidecar container that exited leaves in the emptyDir.
func staleSocket(t testing.TB, root, plugin, file string) string {
	t.Helper()
	path := filepath.Join(root, plugin, file)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("the stale socket file is gone: %v", err)
	}
	return declared(plugin, file)
}

// TestStaleSocketIsWaitedForUntilTheSidecarListens: a socket file that
// exists while nothing listens on it is not ready; the hook waits, within
// the hook point's budget, until a connection succeeds.
func TestStaleSocketIsWaitedForUntilTheSidecarListens(t *testing.T) {
	root := socketRoot(t)
	socket := staleSocket(t, root, "restarting", "hook.sock")
	s := &sidecar{}
	clk := fakeclock.New(time.Now())
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{plugin("restarting", sidecarHook(socket, pb))},
		func(o *pipeline.Options) { o.SocketWaitBudget, o.Clock = 30*time.Second, clk })
	done := make(chan error, 1)
	go func() { done <- p.PreBoot(t.Context(), testVMI(t), pipeline.Artifacts{}) }()
	stepWaits(t, clk, done, 3)
	start(t, root, "restarting", "hook.sock", s)
	if err := waitStepping(clk, done); err != nil {
		t.Fatalf("the hook failed although the sidecar came back within the budget: %v", err)
	}
	if s.calls() != 1 {
		t.Errorf("the restarted sidecar got %d calls, want 1", s.calls())
	}
}

// TestStaleSocketNeverServedSaysNothingListens: when the budget runs out on
// a socket file nothing listens on, the error names the plugin, hook, hook
// point and path and says the socket exists but nothing listens; under
// Ignore the hook is skipped and the chain goes on.
func TestStaleSocketNeverServedSaysNothingListens(t *testing.T) {
	for _, strategy := range []pluginv1alpha1.FailureStrategy{pluginv1alpha1.Fail, pluginv1alpha1.Ignore} {
		t.Run(string(strategy), func(t *testing.T) {
			root := socketRoot(t)
			socket := staleSocket(t, root, "dead", "hook.sock")
			after := &sidecar{}
			p := newPipeline(t, root, []pluginv1alpha1.Plugin{
				plugin("dead", withStrategy(sidecarHook(socket, pb), strategy)),
				plugin("later", sidecarHook(serve(t, root, "later", "hook.sock", after), pb)),
			}, func(o *pipeline.Options) { o.SocketWaitBudget = 300 * time.Millisecond })
			err := p.PreBoot(t.Context(), testVMI(t), pipeline.Artifacts{})
			if strategy == pluginv1alpha1.Ignore {
				if err != nil || after.calls() != 1 {
					t.Fatalf("Ignore: want the dead sidecar skipped, got %v, %d calls of the next one", err, after.calls())
				}
				return
			}
			mustContain(t, err, `plugin "dead" launcher hook #0 (sidecar) at PreBoot`, "socket "+socket,
				"socket exists but nothing listens on it after the 300ms socket wait budget", "connection refused")
			var he *pipeline.HookError
			if !errors.As(err, &he) || he.Socket != socket {
				t.Errorf("want a *HookError naming the socket, got %v", err)
			}
			if after.calls() != 0 {
				t.Errorf("the chain went on after a Fail hook")
			}
		})
	}
}

// TestOneConnectionPerSidecarForTheLifeOfThePipeline: calls after the
// first one, at every hook point, reuse the connection to the sidecar.
func TestOneConnectionPerSidecarForTheLifeOfThePipeline(t *testing.T) {
	root := socketRoot(t)
	sp := start(t, root, "kept", "hook.sock", &sidecar{})
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{plugin("kept", sidecarHook(declared("kept", "hook.sock"), gd, pb, pms))})
	t.Cleanup(func() { _ = p.Close() })
	vmi := testVMI(t)
	if err := p.PreBoot(t.Context(), vmi, pipeline.Artifacts{}); err != nil {
		t.Fatal(err)
	}
	first := sp.lis.accepted.Load()
	for range 3 {
		if _, err := p.GuestDefinition(t.Context(), vmi, testDomain(t), pipeline.Boot); err != nil {
			t.Fatal(err)
		}
		if err := p.PreBoot(t.Context(), vmi, pipeline.Artifacts{}); err != nil {
			t.Fatal(err)
		}
		if _, err := p.PreMigrationSource(t.Context(), vmi, 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := sp.lis.accepted.Load(); got != first {
		t.Errorf("the sidecar accepted %d connections after the first call, want none", got-first)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.PreBoot(t.Context(), vmi, pipeline.Artifacts{}); err == nil {
		t.Errorf("a closed pipeline still called its sidecar")
	}
}

// TestSidecarRestartBetweenCallsIsRedialed: the sidecar restarts between
// two calls, at once or after leaving its socket file unserved for a few
// pauses of the call's socket wait; the next call dials it again (through the checked dial) and
// succeeds, with no error from the broken connection.
func TestSidecarRestartBetweenCallsIsRedialed(t *testing.T) {
	for _, tc := range []struct {
		name string
		// down is how many pauses of its socket wait the call waits
		// through before the sidecar is back.
		down int
	}{
		{"Immediately", 0},
		{"AfterAPause", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := socketRoot(t)
			clk := fakeclock.New(time.Now())
			p := newPipeline(t, root, []pluginv1alpha1.Plugin{plugin("restart", sidecarHook(declared("restart", "hook.sock"), pb))},
				func(o *pipeline.Options) {
					o.SocketWaitBudget = 10 * time.Second
					if tc.down > 0 {
						o.Clock = clk
					}
				})
			t.Cleanup(func() { _ = p.Close() })
			vmi := testVMI(t)
			sp := start(t, root, "restart", "hook.sock", &sidecar{})
			// Several restarts, so that some calls find a connection the
			// client does not know is broken yet.
			for i := range 10 {
				if err := p.PreBoot(t.Context(), vmi, pipeline.Artifacts{}); err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				sp.srv.Stop()
				next := &sidecar{}
				if tc.down == 0 {
					sp = start(t, root, "restart", "hook.sock", next)
					if err := p.PreBoot(t.Context(), vmi, pipeline.Artifacts{}); err != nil {
						t.Fatalf("call after restart %d: %v", i, err)
					}
				} else {
					done := make(chan error, 1)
					go func() { done <- p.PreBoot(t.Context(), vmi, pipeline.Artifacts{}) }()
					stepWaits(t, clk, done, tc.down)
					sp = start(t, root, "restart", "hook.sock", next)
					if err := waitStepping(clk, done); err != nil {
						t.Fatalf("call during restart %d: %v", i, err)
					}
				}
				if next.calls() != 1 {
					t.Fatalf("restart %d: the new sidecar got %d calls, want 1", i, next.calls())
				}
				if tc.down > 0 && i == 2 {
					break
				}
			}
		})
	}
}

// TestSidecarUnavailableStatusIsItsAnswer: a sidecar that answers
// Unavailable fails its hook once; the call is not repeated, and the
// connection, whose transport is fine, is kept.
func TestSidecarUnavailableStatusIsItsAnswer(t *testing.T) {
	root := socketRoot(t)
	s := &sidecar{preBoot: func(context.Context, *hooksv1alpha1.PreBootRequest) (*hooksv1alpha1.PreBootResponse, error) {
		return nil, status.Error(codes.Unavailable, "backend down")
	}}
	sp := start(t, root, "busy", "hook.sock", s)
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{plugin("busy", sidecarHook(declared("busy", "hook.sock"), pb))})
	t.Cleanup(func() { _ = p.Close() })
	var accepted int32
	for i := range 3 {
		err := p.PreBoot(t.Context(), testVMI(t), pipeline.Artifacts{})
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("want the sidecar's Unavailable, got %v", err)
		}
		if s.calls() != i+1 {
			t.Fatalf("after %d hook point calls the sidecar got %d calls: a status it returned was retried", i+1, s.calls())
		}
		if i == 0 {
			accepted = sp.lis.accepted.Load()
		}
	}
	if sp.lis.accepted.Load() != accepted {
		t.Errorf("a status returned by the sidecar made the pipeline dial again")
	}
}

// TestConcurrentCallsShareTheSidecarConnection: hook point calls in flight
// at the same time on one Pipeline all reach the sidecar and succeed; later
// calls dial nothing new.
func TestConcurrentCallsShareTheSidecarConnection(t *testing.T) {
	const n = 20
	root := socketRoot(t)
	arrived := make(chan struct{}, n)
	release := make(chan struct{})
	s := &sidecar{preBoot: func(ctx context.Context, _ *hooksv1alpha1.PreBootRequest) (*hooksv1alpha1.PreBootResponse, error) {
		arrived <- struct{}{}
		select {
		case <-release:
			return &hooksv1alpha1.PreBootResponse{}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
	sp := start(t, root, "shared", "hook.sock", s)
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{plugin("shared", sidecarHook(declared("shared", "hook.sock"), pb))})
	t.Cleanup(func() { _ = p.Close() })
	vmi := testVMI(t)
	errs := make(chan error, n)
	for range n {
		go func() { errs <- p.PreBoot(t.Context(), vmi, pipeline.Artifacts{}) }()
	}
	for range n {
		select {
		case <-arrived:
		case <-time.After(10 * time.Second):
			t.Fatalf("the calls did not all reach the sidecar at once")
		}
	}
	close(release)
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	accepted := sp.lis.accepted.Load()
	if err := p.PreBoot(t.Context(), vmi, pipeline.Artifacts{}); err != nil {
		t.Fatal(err)
	}
	if sp.lis.accepted.Load() != accepted {
		t.Errorf("a call after the concurrent ones dialed again")
	}
}

// TestReportGivesTheTimeSpentWaitingForTheSocket: the report of a sidecar
// hook says how much of its duration went on waiting for the socket, so
// that a host can tell a slow sidecar start from a slow hook; a call on
// the connection kept from it waits for nothing.
func TestReportGivesTheTimeSpentWaitingForTheSocket(t *testing.T) {
	root := socketRoot(t)
	socket := staleSocket(t, root, "late", "hook.sock")
	clk := fakeclock.New(time.Now())
	p := newPipeline(t, root, []pluginv1alpha1.Plugin{plugin("late", sidecarHook(socket, pb))},
		func(o *pipeline.Options) { o.SocketWaitBudget, o.Clock = 30*time.Second, clk })
	type result struct {
		r   *pipeline.Report
		err error
	}
	done := make(chan result, 1)
	errc := make(chan error, 1)
	go func() {
		r, err := p.PreBootWithReport(t.Context(), testVMI(t), pipeline.Artifacts{})
		done <- result{r, err}
		errc <- err
	}()
	var stepped time.Duration
	for range 3 {
		d := <-clk.Waits()
		stepped += d
		clk.Step(d)
	}
	start(t, root, "late", "hook.sock", &sidecar{})
	if err := waitStepping(clk, errc); err != nil {
		t.Fatalf("the hook failed although the sidecar came up within the budget: %v", err)
	}
	first := <-done
	if len(first.r.Hooks) != 1 {
		t.Fatalf("want one hook in the report, got %+v", first.r.Hooks)
	}
	h := first.r.Hooks[0]
	if h.SocketWait < stepped || h.SocketWait > h.Duration {
		t.Errorf("socket wait %s: want at least the %s the clock was stepped while the socket was not served, and at most the hook's %s",
			h.SocketWait, stepped, h.Duration)
	}
	again, err := p.PreBootWithReport(t.Context(), testVMI(t), pipeline.Artifacts{})
	if err != nil {
		t.Fatal(err)
	}
	if w := again.Hooks[0].SocketWait; w != 0 {
		t.Errorf("a call on the kept connection reports a socket wait of %s, want 0", w)
	}
}
