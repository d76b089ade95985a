// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc/codes"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubevirt-plugins/framework/api/celenv"
	"github.com/kubevirt-plugins/framework/api/hookresult"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/api/socketpath"
	"github.com/kubevirt-plugins/framework/handler-runtime/store"
)

func vmi(name string, labels map[string]string) *kubevirtv1.VirtualMachineInstance {
	return &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "default", UID: k8stypes.UID("uid-" + name), Labels: labels,
	}}
}

func nodeHook(socket string, points ...pluginv1alpha1.NodeHookPoint) pluginv1alpha1.NodeHook {
	return pluginv1alpha1.NodeHook{Socket: socket, PermittedHooks: points}
}

func plugin(name, condition string, hooks ...pluginv1alpha1.NodeHook) *pluginv1alpha1.Plugin {
	return &pluginv1alpha1.Plugin{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       pluginv1alpha1.PluginSpec{Condition: condition, NodeHooks: hooks},
	}
}

func newDispatcher(t testing.TB, root string, reg prometheus.Registerer, plugins ...*pluginv1alpha1.Plugin) (*Dispatcher, *staticPlugins) {
	t.Helper()
	src := &staticPlugins{snap: store.Snapshot{Plugins: plugins, Enabled: true, Revision: 1}}
	d, err := New(Options{Plugins: src, SocketRoots: []string{root}, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, src
}

func TestEveryNodeHookPointReachesTheServerWithVMIAndNode(t *testing.T) {
	root := socketRoot(t)
	j := &journal{}
	sock := serve(t, root, &hookServer{name: "all", journal: j})
	d, _ := newDispatcher(t, root, nil, plugin("p", "", nodeHook(sock, pluginv1alpha1.NodeHookPoints...)))

	for _, point := range pluginv1alpha1.NodeHookPoints {
		if err := d.Dispatch(t.Context(), point, vmi("vm-"+string(point), nil), NodeContext{NodeName: "node-1"}); err != nil {
			t.Fatalf("%s: %v", point, err)
		}
	}
	got := j.all()
	if len(got) != len(pluginv1alpha1.NodeHookPoints) {
		t.Fatalf("server saw %d calls, want %d: %+v", len(got), len(pluginv1alpha1.NodeHookPoints), got)
	}
	for i, point := range pluginv1alpha1.NodeHookPoints {
		want := seenCall{Server: "all", HookPoint: string(point), VMI: "vm-" + string(point), Node: "node-1"}
		if got[i] != want {
			t.Errorf("call %d = %+v, want %+v", i, got[i], want)
		}
	}
}

func TestHooksRunAlphabeticallyByPluginThenInDeclarationOrder(t *testing.T) {
	root := socketRoot(t)
	j := &journal{}
	a1 := serve(t, root, &hookServer{name: "a1", journal: j})
	a2 := serve(t, root, &hookServer{name: "a2", journal: j})
	b1 := serve(t, root, &hookServer{name: "b1", journal: j})
	c1 := serve(t, root, &hookServer{name: "c1", journal: j})
	// Given out of order on purpose: the dispatcher must not rely on the source.
	d, _ := newDispatcher(t, root, nil,
		plugin("charlie", "", nodeHook(c1, pluginv1alpha1.PreVMStart)),
		plugin("alpha", "",
			nodeHook(a2, pluginv1alpha1.PreVMStart),
			nodeHook(b1, pluginv1alpha1.PostVMStop), // not permitted at PreVMStart
			nodeHook(a1, pluginv1alpha1.PreVMStart)),
		plugin("bravo", "", nodeHook(b1, pluginv1alpha1.PreVMStart)),
	)
	if err := d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi("vm", nil), NodeContext{NodeName: "n"}); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range j.all() {
		order = append(order, r.Server)
	}
	if got, want := strings.Join(order, ","), "a2,a1,b1,c1"; got != want {
		t.Fatalf("call order = %s, want %s", got, want)
	}
}

func TestPluginAndHookConditionsMustBothHold(t *testing.T) {
	tests := []struct {
		name            string
		pluginCondition string
		hookCondition   string
		labels          map[string]string
		wantCalled      bool
	}{
		{name: "no conditions", wantCalled: true},
		{name: "plugin condition holds", pluginCondition: `"tuned" in vmi.Labels`, labels: map[string]string{"tuned": "cpu"}, wantCalled: true},
		{name: "plugin condition fails", pluginCondition: `"tuned" in vmi.Labels`, labels: map[string]string{"other": "x"}},
		{name: "both hold", pluginCondition: `"tuned" in vmi.Labels`, hookCondition: `vmi.Labels["tuned"] == "cpu"`, labels: map[string]string{"tuned": "cpu"}, wantCalled: true},
		{name: "hook condition narrows", pluginCondition: `"tuned" in vmi.Labels`, hookCondition: `vmi.Labels["tuned"] == "cpu"`, labels: map[string]string{"tuned": "mem"}},
		{name: "hook condition alone", hookCondition: `vmi.Name == "vm"`, wantCalled: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := socketRoot(t)
			j := &journal{}
			sock := serve(t, root, &hookServer{name: "s", journal: j})
			h := nodeHook(sock, pluginv1alpha1.PreVMStart)
			h.Condition = tt.hookCondition
			d, _ := newDispatcher(t, root, nil, plugin("p", tt.pluginCondition, h))
			if err := d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi("vm", tt.labels), NodeContext{}); err != nil {
				t.Fatal(err)
			}
			if called := len(j.all()) == 1; called != tt.wantCalled {
				t.Fatalf("hook called = %v, want %v", called, tt.wantCalled)
			}
		})
	}
}

func TestConditionErrorFailsDispatchWhateverTheFailureStrategy(t *testing.T) {
	tests := []struct {
		name            string
		pluginCondition string
		hookCondition   string
		wantIndex       int
		wantCompile     bool
		wantScope       hookresult.Scope
	}{
		{name: "plugin condition does not compile", pluginCondition: `vmi.NoSuchField == 1`, wantIndex: PluginCondition, wantCompile: true, wantScope: hookresult.ScopePlugin},
		{name: "hook condition is not a bool", hookCondition: `vmi.Name`, wantIndex: 1, wantCompile: true},
		{name: "hook condition fails at run time", hookCondition: `vmi.Labels["missing"] == "x"`, wantIndex: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := socketRoot(t)
			j := &journal{}
			sock := serve(t, root, &hookServer{name: "s", journal: j})
			first := nodeHook(sock, pluginv1alpha1.PreVMStart)
			first.FailureStrategy = pluginv1alpha1.Ignore
			second := nodeHook(sock, pluginv1alpha1.PreVMStart)
			second.FailureStrategy = pluginv1alpha1.Ignore
			second.Condition = tt.hookCondition
			d, _ := newDispatcher(t, root, nil, plugin("p", tt.pluginCondition, first, second))

			err := d.Dispatch(t.Context(), pluginv1alpha1.OnVMStop, vmi("vm", nil), NodeContext{})
			if err != nil {
				t.Fatalf("a hook point no hook permits must not evaluate conditions: %v", err)
			}
			err = d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi("vm", nil), NodeContext{})
			var herr *HookError
			if !errors.As(err, &herr) || herr.Plugin != "p" || herr.HookIndex != tt.wantIndex || herr.HookPoint != pluginv1alpha1.PreVMStart {
				t.Fatalf("Dispatch = %v, want a HookError for plugin p, hook %d, PreVMStart", err, tt.wantIndex)
			}
			if herr.Scope != tt.wantScope {
				t.Fatalf("HookError scope %s, want %s", herr.Scope, tt.wantScope)
			}
			var cerr *celenv.CompileError
			if errors.As(err, &cerr) != tt.wantCompile {
				t.Fatalf("Dispatch = %v; wraps a CompileError = %v, want %v", err, !tt.wantCompile, tt.wantCompile)
			}
			if n := len(j.all()); n != 0 {
				t.Fatalf("%d hooks were called; conditions are decided before any call", n)
			}
		})
	}
}

func TestFailureStrategyIsTheHooksOwn(t *testing.T) {
	tests := []struct {
		name           string
		pluginStrategy pluginv1alpha1.FailureStrategy
		hookStrategy   pluginv1alpha1.FailureStrategy
		wantErr        bool
	}{
		{name: "unset means Fail", wantErr: true},
		{name: "Fail", hookStrategy: pluginv1alpha1.Fail, wantErr: true},
		{name: "Ignore", hookStrategy: pluginv1alpha1.Ignore},
		{name: "plugin Ignore does not apply to node hooks", pluginStrategy: pluginv1alpha1.Ignore, wantErr: true},
		{name: "hook Fail wins over plugin Ignore", pluginStrategy: pluginv1alpha1.Ignore, hookStrategy: pluginv1alpha1.Fail, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := socketRoot(t)
			j := &journal{}
			bad := serve(t, root, &hookServer{name: "bad", journal: j, fail: codes.Internal})
			good := serve(t, root, &hookServer{name: "good", journal: j})
			h := nodeHook(bad, pluginv1alpha1.PreVMStart)
			h.FailureStrategy = tt.hookStrategy
			p := plugin("p", "", h, nodeHook(good, pluginv1alpha1.PreVMStart))
			p.Spec.FailureStrategy = tt.pluginStrategy
			reg := prometheus.NewRegistry()
			d, _ := newDispatcher(t, root, reg, p)

			err := d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi("vm", nil), NodeContext{})
			if (err != nil) != tt.wantErr {
				t.Fatalf("Dispatch = %v, want error %v", err, tt.wantErr)
			}
			calls := len(j.all())
			ignored := testutil.ToFloat64(d.metrics.ignoredFailures.WithLabelValues("p", "PreVMStart"))
			if tt.wantErr {
				var herr *HookError
				if !errors.As(err, &herr) || herr.HookIndex != 0 || !strings.Contains(err.Error(), `plugin "p" node hook #0`) {
					t.Fatalf("error %q does not name plugin p, hook 0", err)
				}
				if calls != 1 || ignored != 0 {
					t.Fatalf("calls = %d, ignored = %v; a Fail hook must stop the dispatch", calls, ignored)
				}
			} else if calls != 2 || ignored != 1 {
				t.Fatalf("calls = %d, ignored = %v; an ignored failure must let the next hook run", calls, ignored)
			}
		})
	}
}

func TestServerDownFailsWithFailAndPassesWithIgnore(t *testing.T) {
	root := socketRoot(t)
	// A crashed server leaves its socket file behind: connecting is refused.
	stale := filepath.Join(root, "stale.sock")
	l, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	missing := filepath.Join(root, "missing.sock")

	for _, sock := range []string{stale, missing} {
		for _, strategy := range []pluginv1alpha1.FailureStrategy{pluginv1alpha1.Fail, pluginv1alpha1.Ignore} {
			h := nodeHook(sock, pluginv1alpha1.PreVMStart)
			h.FailureStrategy = strategy
			d, _ := newDispatcher(t, root, nil, plugin("p", "", h))
			err := d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi("vm", nil), NodeContext{})
			if (err != nil) != (strategy == pluginv1alpha1.Fail) {
				t.Fatalf("%s with %s: Dispatch = %v", filepath.Base(sock), strategy, err)
			}
		}
	}
}

func TestHookPastItsTimeoutIsCutOff(t *testing.T) {
	root := socketRoot(t)
	j := &journal{}
	sock := serve(t, root, &hookServer{name: "hold", journal: j, hold: true})
	h := nodeHook(sock, pluginv1alpha1.PreVMStart)
	h.Timeout = &metav1.Duration{Duration: 50 * time.Millisecond}
	reg := prometheus.NewRegistry()
	d, _ := newDispatcher(t, root, reg, plugin("p", "", h))

	err := d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi("vm", nil), NodeContext{})
	if !errors.Is(err, ErrHookTimeout) {
		t.Fatalf("Dispatch = %v, want ErrHookTimeout", err)
	}
	if n := sampleCount(t, reg, MetricCallDuration,
		map[string]string{"plugin": "p", "hook_point": "PreVMStart", "outcome": OutcomeTimeout}); n != 1 {
		t.Fatalf("%d timed-out calls recorded, want 1", n)
	}
	if n := sampleCount(t, reg, MetricDispatchDuration,
		map[string]string{"hook_point": "PreVMStart", "outcome": OutcomeError}); n != 1 {
		t.Fatalf("%d failed dispatches recorded, want 1", n)
	}
	if v := testutil.ToFloat64(d.metrics.inFlight.WithLabelValues("PreVMStart")); v != 0 {
		t.Fatalf("in-flight gauge = %v after the dispatch returned", v)
	}
}

// sampleCount is the observation count of the histogram series of name
// whose labels include want.
func sampleCount(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) uint64 {
	t.Helper()
	return histogram(t, reg, name, want).GetSampleCount()
}

// histogram is the histogram series of name whose labels include want;
// empty when there is none.
func histogram(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) *dto.Histogram {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for k, v := range want {
				if labelValue(m, k) != v {
					continue series
				}
			}
			return m.GetHistogram()
		}
	}
	return &dto.Histogram{}
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func TestSocketsAreCheckedBeforeDialing(t *testing.T) {
	root := socketRoot(t)
	elsewhere := socketRoot(t)
	j := &journal{}
	outside := serve(t, elsewhere, &hookServer{name: "outside", journal: j})
	inside := serve(t, root, &hookServer{name: "inside", journal: j})
	link := filepath.Join(root, "link.sock")
	if err := os.Symlink(inside, link); err != nil {
		t.Fatal(err)
	}
	for _, sock := range []string{outside, link} {
		d, _ := newDispatcher(t, root, nil, plugin("p", "", nodeHook(sock, pluginv1alpha1.PreVMStart)))
		err := d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi("vm", nil), NodeContext{})
		if !errors.Is(err, socketpath.ErrRejected) {
			t.Fatalf("socket %s: Dispatch = %v, want ErrRejected", sock, err)
		}
	}
	if n := len(j.all()); n != 0 {
		t.Fatalf("%d calls reached a server through a refused socket", n)
	}
}

func TestFeatureGateOffDispatchesNothing(t *testing.T) {
	root := socketRoot(t)
	j := &journal{}
	sock := serve(t, root, &hookServer{name: "s", journal: j})
	d, src := newDispatcher(t, root, nil, plugin("p", "", nodeHook(sock, pluginv1alpha1.NodeHookPoints...)))
	// Enabled alone must stop the dispatch, even from a source that still
	// lists plugins.
	src.snap.Enabled = false
	for _, point := range pluginv1alpha1.NodeHookPoints {
		if err := d.Dispatch(t.Context(), point, vmi("vm", nil), NodeContext{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(j.all()); n != 0 {
		t.Fatalf("%d calls with the feature gate off", n)
	}
}

func TestUnsyncedStoreFailsTheDispatch(t *testing.T) {
	d, src := newDispatcher(t, socketRoot(t), nil)
	src.err = store.ErrNotSynced
	err := d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi("vm", nil), NodeContext{})
	if !errors.Is(err, store.ErrNotSynced) {
		t.Fatalf("Dispatch = %v, want ErrNotSynced", err)
	}
}

func TestUnknownHookPointIsRefused(t *testing.T) {
	d, _ := newDispatcher(t, socketRoot(t), nil)
	for _, point := range []pluginv1alpha1.NodeHookPoint{"", "GuestDefinition", "PreBoot"} {
		if err := d.Dispatch(t.Context(), point, vmi("vm", nil), NodeContext{}); err == nil {
			t.Errorf("Dispatch at %q succeeded", point)
		}
	}
}

// The connection to a socket no Plugin names any more is closed at the next
// dispatch after the change; the connections still in use stay open.
func TestConnectionsToSocketsNoPluginNamesAreClosed(t *testing.T) {
	root := socketRoot(t)
	j := &journal{}
	gone := &hookServer{name: "gone", journal: j}
	stays := &hookServer{name: "stays", journal: j}
	goneSock, staysSock := serve(t, root, gone), serve(t, root, stays)
	d, src := newDispatcher(t, root, nil,
		plugin("a", "", nodeHook(goneSock, pluginv1alpha1.PreVMStart)),
		plugin("b", "", nodeHook(staysSock, pluginv1alpha1.PreVMStart)))

	if err := d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi("vm", nil), NodeContext{}); err != nil {
		t.Fatal(err)
	}
	if g, s := gone.open.Load(), stays.open.Load(); g != 1 || s != 1 {
		t.Fatalf("open connections after the first dispatch: gone %d, stays %d; want 1 each", g, s)
	}

	src.snap = store.Snapshot{Plugins: []*pluginv1alpha1.Plugin{plugin("b", "", nodeHook(staysSock, pluginv1alpha1.PreVMStart))}, Enabled: true, Revision: 2}
	if err := d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi("vm", nil), NodeContext{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return gone.open.Load() == 0, nil
	}); err != nil {
		t.Fatalf("the connection to %s is still open after its Plugin was deleted: %v", goneSock, err)
	}
	if s := stays.open.Load(); s != 1 {
		t.Fatalf("open connections to the socket still in use: %d, want the one pooled connection", s)
	}
	if n := len(j.all()); n != 3 {
		t.Fatalf("servers saw %d calls, want 3", n)
	}
}
