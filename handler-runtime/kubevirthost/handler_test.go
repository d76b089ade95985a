// SPDX-License-Identifier: Apache-2.0

package kubevirthost_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubevirtv1 "kubevirt.io/api/core/v1"
	kvplugin "kubevirt.io/api/plugin/v1alpha1"

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
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{store.Resource(): "PluginList"}, plugins...)
	s, err := store.New(store.Options{Client: client})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Run(t.Context()) }()
	h, err := kubevirthost.New(kubevirthost.Options{Plugins: s, SocketRoots: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	h.Run(t.Context())
	if !h.WaitForSync(t.Context()) {
		t.Fatal("the Plugin store did not sync")
	}
	return h
}

func TestCallNodeHooksReachesThePluginsServerWithTheVMIAndNode(t *testing.T) {
	root := t.TempDir()
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
	var list pluginv1alpha1.PluginList
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "cel-tuning" {
		t.Fatalf("handed over %s", data)
	}
}
