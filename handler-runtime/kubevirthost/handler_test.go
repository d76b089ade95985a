// SPDX-License-Identifier: Apache-2.0

package kubevirthost_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/record"
	kubevirtv1 "kubevirt.io/api/core/v1"
	kvplugin "kubevirt.io/api/plugin/v1alpha1"

	"github.com/kubevirt-plugins/framework/api/handover"
	"github.com/kubevirt-plugins/framework/api/hookcounts"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/handler-runtime/dispatch"
	"github.com/kubevirt-plugins/framework/handler-runtime/kubevirthost"
	"github.com/kubevirt-plugins/framework/handler-runtime/store"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// Every lifecycle point KubeVirt v1.9's virt-handler reports has its own
// node hook point; its PreVMStop (KubeVirt stops a running VM) is OnVMStop.
func TestEveryKubeVirtLifecyclePointHasItsNodeHookPoint(t *testing.T) {
	want := map[kvplugin.NodeHookPoint]pluginv1alpha1.NodeHookPoint{
		kvplugin.NodeHookPreVMStart:          pluginv1alpha1.PreVMStart,
		kvplugin.NodeHookPostVMStart:         pluginv1alpha1.PostVMStart,
		kvplugin.NodeHookPreVMStop:           pluginv1alpha1.OnVMStop,
		kvplugin.NodeHookPostVMStop:          pluginv1alpha1.PostVMStop,
		kvplugin.NodeHookPreMigrationSource:  pluginv1alpha1.NodePreMigrationSource,
		kvplugin.NodeHookPreMigrationTarget:  pluginv1alpha1.PreMigrationTarget,
		kvplugin.NodeHookPostMigrationTarget: pluginv1alpha1.PostMigrationTarget,
	}
	seen := map[pluginv1alpha1.NodeHookPoint]bool{}
	for kv, p := range want {
		got, ok := kubevirthost.HookPoint(kv)
		if !ok || got != p {
			t.Errorf("HookPoint(%s) = %q, %v; want %q", kv, got, ok, p)
		}
		seen[got] = true
	}
	if len(seen) != 7 {
		t.Errorf("the seven lifecycle points reach %d node hook points, want 7", len(seen))
	}
	if _, ok := kubevirthost.HookPoint("PreVMPause"); ok {
		t.Error("an unknown lifecycle point has a node hook point")
	}
}

// recorder is a real NodeHookService on a Unix socket that records calls.
type recorder struct {
	hooksv1alpha1.UnimplementedNodeHookServiceServer
	mu    sync.Mutex
	calls []string
}

func (r *recorder) ExecuteNodeHook(_ context.Context, req *hooksv1alpha1.ExecuteNodeHookRequest) (*hooksv1alpha1.ExecuteNodeHookResponse, error) {
	var vmi kubevirtv1.VirtualMachineInstance
	if err := json.Unmarshal(req.Vmi, &vmi); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, req.HookPoint+" "+string(vmi.UID)+" "+req.GetNodeContext().GetNodeName())
	return &hooksv1alpha1.ExecuteNodeHookResponse{}, nil
}

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

func plugin(t *testing.T, name string, spec pluginv1alpha1.PluginSpec) runtime.Object {
	t.Helper()
	p := &pluginv1alpha1.Plugin{
		TypeMeta:   metav1.TypeMeta{APIVersion: pluginv1alpha1.GroupVersion.String(), Kind: "Plugin"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
		Spec:       spec,
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

func newHandler(t *testing.T, root string, plugins ...runtime.Object) *kubevirthost.Handler {
	t.Helper()
	return newHandlerOn(t, root, nil, plugins...)
}

// newHandlerOn is newHandler with its metrics registered on reg.
func newHandlerOn(t *testing.T, root string, reg prometheus.Registerer, plugins ...runtime.Object) *kubevirthost.Handler {
	t.Helper()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{store.Resource(): "PluginList"}, plugins...)
	s, err := store.New(store.Options{Client: client})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Run(t.Context()) }()
	h, err := kubevirthost.New(kubevirthost.Options{Plugins: s, SocketRoots: []string{root}, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	h.Run(t.Context())
	if !h.WaitForSync(t.Context()) {
		t.Fatal("the Plugin store did not sync")
	}
	return h
}

// serveRecorder serves a recorder on a Unix socket under root.
func serveRecorder(t *testing.T, root string) (string, *recorder) {
	t.Helper()
	socket := filepath.Join(root, "recorder.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	srv := grpc.NewServer()
	hooksv1alpha1.RegisterNodeHookServiceServer(srv, rec)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return socket, rec
}

func TestCallNodeHooksReachesThePluginsServerWithTheVMIAndNode(t *testing.T) {
	root := t.TempDir()
	socket, rec := serveRecorder(t, root)

	h := newHandler(t, root, plugin(t, "recorder", pluginv1alpha1.PluginSpec{NodeHooks: []pluginv1alpha1.NodeHook{{
		Socket: socket, PermittedHooks: []pluginv1alpha1.NodeHookPoint{pluginv1alpha1.PreVMStart, pluginv1alpha1.OnVMStop},
	}}}))
	vmi := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vm", UID: "uid-1"}}
	for _, p := range []kvplugin.NodeHookPoint{kvplugin.NodeHookPreVMStart, kvplugin.NodeHookPostVMStart, kvplugin.NodeHookPreVMStop} {
		if err := h.CallNodeHooks(p, vmi, "worker-1"); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	got := strings.Join(rec.seen(), "; ")
	if got != "PreVMStart uid-1 worker-1; OnVMStop uid-1 worker-1" {
		t.Fatalf("the server saw %q", got)
	}
}

// stopRecorder is a Handler whose Plugin's node hook, at OnVMStop and
// PostVMStop, selects the VMIs labelled stop-hooks.
func stopRecorder(t *testing.T) (*kubevirthost.Handler, *recorder) {
	t.Helper()
	root := t.TempDir()
	socket, rec := serveRecorder(t, root)
	h := newHandler(t, root, plugin(t, "recorder", pluginv1alpha1.PluginSpec{NodeHooks: []pluginv1alpha1.NodeHook{{
		Socket: socket, Condition: `"stop-hooks" in vmi.Labels`,
		PermittedHooks: []pluginv1alpha1.NodeHookPoint{pluginv1alpha1.OnVMStop, pluginv1alpha1.PostVMStop},
	}}}))
	return h, rec
}

func labelledVMI(uid string) *kubevirtv1.VirtualMachineInstance {
	return &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{
		Namespace: "default", Name: "vm", UID: types.UID(uid), Labels: map[string]string{"stop-hooks": "yes"}}}
}

// goneVMI is what virt-handler knows of a VMI deleted from the cluster:
// its namespace and name, its UID only while its ghost record lasts.
func goneVMI(uid string) *kubevirtv1.VirtualMachineInstance {
	return &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vm", UID: types.UID(uid)}}
}

// A stop KubeVirt began ends with PostVMStop although the VMI was deleted
// before virt-handler saw it final: the hook is selected and called with
// the VMI as it was at OnVMStop, once.
func TestPostVMStopOwedAfterOnVMStopIsCalledWhenTheVMIIsGone(t *testing.T) {
	for _, uid := range []string{"uid-1", ""} {
		h, rec := stopRecorder(t)
		if err := h.CallNodeHooks(kvplugin.NodeHookPreVMStop, labelledVMI("uid-1"), "worker-1"); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := h.VMStopped(goneVMI(uid), true, "worker-1"); err != nil {
				t.Fatal(err)
			}
		}
		got := strings.Join(rec.seen(), "; ")
		if got != "OnVMStop uid-1 worker-1; PostVMStop uid-1 worker-1" {
			t.Errorf("gone VMI known by UID %q: the server saw %q, want OnVMStop then one PostVMStop", uid, got)
		}
	}
}

// With the VMI still there, VMStopped calls PostVMStop with it as
// virt-handler has it.
func TestPostVMStopOwedIsCalledWithTheVMIVirtHandlerHas(t *testing.T) {
	h, rec := stopRecorder(t)
	if err := h.CallNodeHooks(kvplugin.NodeHookPreVMStop, labelledVMI("uid-1"), "worker-1"); err != nil {
		t.Fatal(err)
	}
	now := labelledVMI("uid-1")
	now.Status.Phase = kubevirtv1.Succeeded
	if err := h.VMStopped(now, false, "worker-1"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rec.seen(), "; "); got != "OnVMStop uid-1 worker-1; PostVMStop uid-1 worker-1" {
		t.Errorf("the server saw %q", got)
	}
}

// Nothing is owed, so nothing is called: no stop began here (a VM that
// migrated away, a VMI that never started), KubeVirt's own PostVMStop came
// first, or the domain removed is another VMI of the same name.
func TestVMStoppedCallsNothingThatIsNotOwed(t *testing.T) {
	for name, before := range map[string][]kvplugin.NodeHookPoint{
		"no OnVMStop":             {kvplugin.NodeHookPreMigrationSource},
		"PostVMStop already came": {kvplugin.NodeHookPreVMStop, kvplugin.NodeHookPostVMStop},
	} {
		h, rec := stopRecorder(t)
		for _, p := range before {
			if err := h.CallNodeHooks(p, labelledVMI("uid-1"), "worker-1"); err != nil {
				t.Fatal(err)
			}
		}
		want := len(rec.seen())
		if err := h.VMStopped(goneVMI("uid-1"), true, "worker-1"); err != nil {
			t.Fatal(err)
		}
		if got := rec.seen(); len(got) != want {
			t.Errorf("%s: VMStopped called the server: %v", name, got[want:])
		}
	}
	h, rec := stopRecorder(t)
	if err := h.CallNodeHooks(kvplugin.NodeHookPreVMStop, labelledVMI("uid-1"), "worker-1"); err != nil {
		t.Fatal(err)
	}
	if err := h.VMStopped(goneVMI("uid-2"), true, "worker-1"); err != nil {
		t.Fatal(err)
	}
	if got := rec.seen(); len(got) != 1 {
		t.Errorf("another VMI of the same name: VMStopped called the server: %v", got[1:])
	}
}

func TestCallNodeHooksFailsNamingThePluginWhenItsServerIsAbsent(t *testing.T) {
	root := t.TempDir()
	h := newHandler(t, root, plugin(t, "absent", pluginv1alpha1.PluginSpec{NodeHooks: []pluginv1alpha1.NodeHook{{
		Socket: filepath.Join(root, "absent.sock"), PermittedHooks: []pluginv1alpha1.NodeHookPoint{pluginv1alpha1.PreVMStart},
	}}}))
	vmi := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vm"}}
	err := h.CallNodeHooks(kvplugin.NodeHookPreVMStart, vmi, "worker-1")
	var he *dispatch.HookError
	if !errors.As(err, &he) || he.Plugin != "absent" || !strings.Contains(err.Error(), "PreVMStart") {
		t.Fatalf("error = %v, want a *dispatch.HookError of plugin absent at PreVMStart", err)
	}
	if err := h.CallNodeHooks("PreVMPause", vmi, "worker-1"); err == nil || !strings.Contains(err.Error(), `"PreVMPause"`) {
		t.Fatalf("unknown point: error = %v", err)
	}
}

func TestLauncherPluginsHandsOverThePluginsWithLauncherHooks(t *testing.T) {
	h := newHandler(t, t.TempDir(),
		plugin(t, "cel-tuning", pluginv1alpha1.PluginSpec{LauncherHooks: []pluginv1alpha1.LauncherHook{{CEL: &pluginv1alpha1.CELHook{
			HookPoint: pluginv1alpha1.GuestDefinition, Expression: `Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`,
		}}}}),
		plugin(t, "node-only", pluginv1alpha1.PluginSpec{NodeHooks: []pluginv1alpha1.NodeHook{{
			Socket: "/var/run/kubevirt/n.sock", PermittedHooks: []pluginv1alpha1.NodeHookPoint{pluginv1alpha1.PreVMStart},
		}}}))
	data, err := h.LauncherPlugins(&kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vm"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := handover.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Name != "cel-tuning" {
		t.Fatalf("handed over %s", data)
	}
}

// virt-handler's registry holds the launcher hook series the launchers of
// its node report next to its node hook series, without a clash: a report
// recorded through the Handler is scraped from it, with the series of the
// Plugins it knows at 0; a report naming a Plugin it does not know is
// refused, naming the VMI.
func TestLauncherHookCountsAreScrapedFromVirtHandlerNextToTheNodeHookSeries(t *testing.T) {
	root := t.TempDir()
	reg := prometheus.NewPedanticRegistry()
	h := newHandlerOn(t, root, reg, plugin(t, "both", pluginv1alpha1.PluginSpec{
		LauncherHooks: []pluginv1alpha1.LauncherHook{{CEL: &pluginv1alpha1.CELHook{
			HookPoint: pluginv1alpha1.GuestDefinition, Expression: `Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`,
		}}},
		NodeHooks: []pluginv1alpha1.NodeHook{{
			Socket: filepath.Join(root, "absent.sock"), PermittedHooks: []pluginv1alpha1.NodeHookPoint{pluginv1alpha1.PreVMStart},
			FailureStrategy: pluginv1alpha1.Ignore,
		}},
	}))
	vmi := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vm"}}
	if err := h.CallNodeHooks(kvplugin.NodeHookPreVMStart, vmi, "worker-1"); err != nil {
		t.Fatal(err)
	}
	if err := h.RecordLauncherHookCounts(vmi, []byte(`{"version":1,"outcomes":[{"plugin":"both","hookPoint":"GuestDefinition","outcome":"error","count":2}],
		"celCostLimitExceeded":[{"plugin":"both","hookPoint":"GuestDefinition","count":1}]}`)); err != nil {
		t.Fatal(err)
	}
	err := h.RecordLauncherHookCounts(vmi, []byte(`{"version":1,"outcomes":[{"plugin":"stranger","hookPoint":"PreBoot","outcome":"error","count":1}]}`))
	if err == nil || !strings.Contains(err.Error(), "VMI default/vm") || !strings.Contains(err.Error(), `"stranger"`) {
		t.Fatalf("a report naming an unknown Plugin: error %v", err)
	}
	want := `
# HELP kubevirt_plugins_launcher_hook_cel_cost_limit_exceeded_total Evaluations of a plugin's CEL condition or GuestDefinition expression stopped by the CEL cost limit in a launcher, per plugin and hook point, as the virt-launchers of the node reported them to virt-handler.
# TYPE kubevirt_plugins_launcher_hook_cel_cost_limit_exceeded_total counter
kubevirt_plugins_launcher_hook_cel_cost_limit_exceeded_total{hook_point="GuestDefinition",plugin="both"} 1
# HELP kubevirt_plugins_launcher_hook_outcomes_total Launcher hook runs per plugin, hook point and outcome (success, error, ignored, skipped), as the virt-launchers of the node reported them to virt-handler.
# TYPE kubevirt_plugins_launcher_hook_outcomes_total counter
kubevirt_plugins_launcher_hook_outcomes_total{hook_point="GuestDefinition",outcome="error",plugin="both"} 2
kubevirt_plugins_launcher_hook_outcomes_total{hook_point="GuestDefinition",outcome="ignored",plugin="both"} 0
kubevirt_plugins_launcher_hook_outcomes_total{hook_point="GuestDefinition",outcome="skipped",plugin="both"} 0
kubevirt_plugins_launcher_hook_outcomes_total{hook_point="GuestDefinition",outcome="success",plugin="both"} 0
# HELP kubevirt_plugins_node_hook_ignored_failures_total Node hook calls that failed or timed out and were ignored by failureStrategy Ignore.
# TYPE kubevirt_plugins_node_hook_ignored_failures_total counter
kubevirt_plugins_node_hook_ignored_failures_total{hook_point="PreVMStart",plugin="both"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"kubevirt_plugins_launcher_hook_outcomes_total", "kubevirt_plugins_launcher_hook_cel_cost_limit_exceeded_total",
		dispatch.MetricIgnoredFailures); err != nil {
		t.Fatal(err)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", err, problems)
	}
}

// virt-handler hands LauncherReports the recorder of its domain notify
// server: a launcher's report, arriving as an Event of the reserved
// reason, becomes counts and never an Event; every other Event passes.
func TestLauncherReportsTakeTheCountsOutOfTheEventsAndPassTheRest(t *testing.T) {
	root := t.TempDir()
	reg := prometheus.NewPedanticRegistry()
	h := newHandlerOn(t, root, reg, plugin(t, "tuner", pluginv1alpha1.PluginSpec{
		LauncherHooks: []pluginv1alpha1.LauncherHook{{CEL: &pluginv1alpha1.CELHook{
			HookPoint: pluginv1alpha1.GuestDefinition, Expression: `Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`,
		}}},
	}))
	next := record.NewFakeRecorder(10)
	rec := h.LauncherReports(next)
	vmi := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vm"}}
	report := `{"version":1,"outcomes":[{"plugin":"tuner","hookPoint":"GuestDefinition","outcome":"success","count":1}]}`
	rec.Event(vmi, corev1.EventTypeNormal, hookcounts.EventReason, report)
	rec.Eventf(vmi, corev1.EventTypeNormal, hookcounts.EventReason, "%s", report)
	rec.Event(vmi, corev1.EventTypeNormal, hookcounts.EventReason, `{"version":1,"outcomes":[{"plugin":"stranger","hookPoint":"PreBoot","outcome":"error","count":1}]}`)
	rec.Event(vmi, corev1.EventTypeWarning, "SyncFailed", "something else")
	rec.AnnotatedEventf(vmi, nil, corev1.EventTypeNormal, "Started", "VMI %s started", vmi.Name)
	close(next.Events)
	var passed []string
	for e := range next.Events {
		passed = append(passed, e)
	}
	if want := []string{"Warning SyncFailed something else", "Normal Started VMI vm started"}; !slices.Equal(passed, want) {
		t.Errorf("Events passed on: got %q, want %q", passed, want)
	}
	if got := outcomeCount(t, reg, "tuner", "GuestDefinition", "success"); got != 2 {
		t.Errorf("tuner's GuestDefinition successes: got %v, want 2 (two reports, the refused one not counted)", got)
	}
}

// outcomeCount reads one series of the launcher outcome counter in reg.
func outcomeCount(t *testing.T, reg prometheus.Gatherer, plugin, point, outcome string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "kubevirt_plugins_launcher_hook_outcomes_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["plugin"] == plugin && l["hook_point"] == point && l["outcome"] == outcome {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no launcher outcome series {plugin=%q,hook_point=%q,outcome=%q}", plugin, point, outcome)
	return 0
}
