// SPDX-License-Identifier: Apache-2.0

package dispatch_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"google.golang.org/grpc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/handler-runtime/dispatch"
	"github.com/kubevirt-plugins/framework/handler-runtime/store"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// printingServer is a node hook server that prints what it receives.
type printingServer struct {
	hooksv1alpha1.UnimplementedNodeHookServiceServer
}

func (printingServer) ExecuteNodeHook(_ context.Context, req *hooksv1alpha1.ExecuteNodeHookRequest) (*hooksv1alpha1.ExecuteNodeHookResponse, error) {
	fmt.Println("server got", req.HookPoint, "on", req.NodeContext.GetNodeName())
	return &hooksv1alpha1.ExecuteNodeHookResponse{}, nil
}

// fixedPlugins stands in for a *store.Store in this example.
type fixedPlugins []*pluginv1alpha1.Plugin

func (f fixedPlugins) Snapshot() (store.Snapshot, error) {
	return store.Snapshot{Plugins: f, Enabled: true, Revision: 1}, nil
}

func Example() {
	// A host path virt-handler mounts; here a temporary directory.
	root, _ := os.MkdirTemp("", "node-hooks-")
	defer os.RemoveAll(root)
	socket := filepath.Join(root, "recorder.sock")
	l, _ := net.Listen("unix", socket)
	srv := grpc.NewServer()
	hooksv1alpha1.RegisterNodeHookServiceServer(srv, printingServer{})
	go srv.Serve(l)
	defer srv.Stop()

	plugins := fixedPlugins{{
		ObjectMeta: metav1.ObjectMeta{Name: "recorder"},
		Spec: pluginv1alpha1.PluginSpec{NodeHooks: []pluginv1alpha1.NodeHook{{
			Socket:         socket,
			PermittedHooks: []pluginv1alpha1.NodeHookPoint{pluginv1alpha1.PreVMStart},
			Condition:      `vmi.Labels["tier"] == "gold"`,
		}}},
	}}
	d, err := dispatch.New(dispatch.Options{Plugins: plugins, SocketRoots: []string{root}})
	if err != nil {
		panic(err)
	}
	defer d.Close()

	for _, tier := range []string{"gold", "silver"} {
		vmi := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{
			Name: "vm-" + tier, Namespace: "default", Labels: map[string]string{"tier": tier},
		}}
		err := d.Dispatch(context.Background(), pluginv1alpha1.PreVMStart, vmi, dispatch.NodeContext{NodeName: "node01"})
		fmt.Println("dispatched", vmi.Name, "error:", err)
	}
	// Output:
	// server got PreVMStart on node01
	// dispatched vm-gold error: <nil>
	// dispatched vm-silver error: <nil>
}
