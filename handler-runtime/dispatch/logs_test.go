// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubevirt-plugins/framework/api/hookresult"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/handler-runtime/store"
)

// The dispatcher logs as api/hookresult says, as the launcher's pipeline
// does: an ignored failure with Error and the *HookError, a hook that
// succeeded at V(1), with the same keys.
func TestLogsFollowTheHookResultConvention(t *testing.T) {
	root := socketRoot(t)
	ok := nodeHook(serve(t, root, &hookServer{name: "ok", journal: &journal{}}), pluginv1alpha1.PreVMStart)
	gone := nodeHook(filepath.Join(root, "gone.sock"), pluginv1alpha1.PreVMStart)
	gone.FailureStrategy = pluginv1alpha1.Ignore
	var mu sync.Mutex
	var lines []string
	log := funcr.New(func(_, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{Verbosity: hookresult.HookLogV})
	src := &staticPlugins{snap: store.Snapshot{Plugins: []*pluginv1alpha1.Plugin{plugin("p", "", ok, gone)}, Enabled: true, Revision: 1}}
	d, err := New(Options{Plugins: src, SocketRoots: []string{root}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if err := d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi("vm", nil), NodeContext{}); err != nil {
		t.Fatal(err)
	}
	matching := func(part string) []string {
		var out []string
		for _, l := range lines {
			if strings.Contains(l, part) {
				out = append(out, l)
			}
		}
		return out
	}
	ignored := matching(hookresult.IgnoredMessage)
	if len(ignored) != 1 {
		t.Fatalf("ignored failure lines %q, want 1", ignored)
	}
	for _, want := range []string{`"error"="plugin \"p\" node hook #1 (socket `, `"plugin"="p"`, `"hookIndex"=1`,
		`"hookPoint"="PreVMStart"`, `"outcome"="ignored"`, `"duration"=`} {
		if !strings.Contains(ignored[0], want) {
			t.Errorf("ignored failure line %s lacks %s", ignored[0], want)
		}
	}
	if strings.Contains(ignored[0], `"level"=`) {
		t.Errorf("ignored failure logged at a verbosity: %s", ignored[0])
	}
	done := matching("node hook done")
	if len(done) != 1 {
		t.Fatalf("hook lines %q, want 1", done)
	}
	for _, want := range []string{`"level"=1`, `"plugin"="p"`, `"hookIndex"=0`, `"hookPoint"="PreVMStart"`, `"outcome"="success"`, `"duration"=`} {
		if !strings.Contains(done[0], want) {
			t.Errorf("hook line %s lacks %s", done[0], want)
		}
	}
}

// steppingClock moves one second forward every time it is read.
type steppingClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *steppingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(time.Second)
	return c.now
}

func (c *steppingClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Durations are measured with Options.Clock, as the pipeline's are with
// its Options.Clock.
func TestDurationsComeFromTheClock(t *testing.T) {
	root := socketRoot(t)
	h := nodeHook(serve(t, root, &hookServer{name: "ok", journal: &journal{}}), pluginv1alpha1.PreVMStart)
	reg := prometheus.NewRegistry()
	src := &staticPlugins{snap: store.Snapshot{Plugins: []*pluginv1alpha1.Plugin{plugin("p", "", h)}, Enabled: true, Revision: 1}}
	d, err := New(Options{Plugins: src, SocketRoots: []string{root}, Registerer: reg, Clock: &steppingClock{now: time.Unix(0, 0)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if err := d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi("vm", nil), NodeContext{}); err != nil {
		t.Fatal(err)
	}
	// Read once at the start, once at the end: one step.
	if got := histogram(t, reg, "kubevirt_plugins_node_hook_call_duration_seconds", map[string]string{"plugin": "p"}).GetSampleSum(); got != 1 {
		t.Errorf("call duration %vs, want 1s from the clock", got)
	}
	if got := histogram(t, reg, "kubevirt_plugins_node_hook_vmi_wait_seconds", nil).GetSampleSum(); got != 1 {
		t.Errorf("VMI wait %vs, want 1s from the clock", got)
	}
}

// The call metrics' outcome label says success and error with the words
// of hookresult.Outcome.
func TestCallOutcomeLabelsUseTheHookResultWords(t *testing.T) {
	if OutcomeSuccess != string(hookresult.Success) || OutcomeError != string(hookresult.Error) {
		t.Errorf("labels %q, %q; hookresult says %q, %q", OutcomeSuccess, OutcomeError, hookresult.Success, hookresult.Error)
	}
}
