// SPDX-License-Identifier: Apache-2.0

package handler

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/handler-runtime/dispatch"
	"github.com/kubevirt-plugins/framework/protos/sdk"
)

// TestSlowHookServerDoesNotDelayVMIsThatDoNotUseIt dispatches PreVMStart
// for 100 VMIs at once. Every VMI calls the fast server; the odd ones also
// call a server that holds every call until the test lets it answer. Every
// fast-only dispatch returns while the slow server still holds the calls
// of the others: a slow server holds up only the VMIs that use it.
func TestSlowHookServerDoesNotDelayVMIsThatDoNotUseIt(t *testing.T) {
	fast := startRecorder(t, "fast", "hook.sock", "fast")
	release := make(chan struct{})
	slow := &holdingServer{release: release}
	slowHook := nodeHook(serveNodeHooks(t, "slow", slow), pluginv1alpha1.PreVMStart)
	slowHook.Condition = `vmi.Labels["speed"] == "slow"`
	// The held calls wait for the fast ones, however long a loaded machine
	// makes those.
	slowHook.Timeout = &metav1.Duration{Duration: 10 * time.Minute}
	createPlugins(t,
		newPlugin("fast", "", nodeHook(fast.Socket, pluginv1alpha1.PreVMStart)),
		newPlugin("slow", "", slowHook),
	)

	const vmis = 100
	type done struct {
		name string
		slow bool
		err  error
	}
	finished := make(chan done, vmis)
	var wg sync.WaitGroup
	for i := range vmis {
		usesSlow := i%2 == 1
		labels := map[string]string{"speed": "fast"}
		if usesSlow {
			labels["speed"] = "slow"
		}
		vmi := newVMI(fmt.Sprintf("vm-%03d", i), labels)
		wg.Go(func() {
			err := dispatcher.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi, dispatch.NodeContext{NodeName: "n"})
			finished <- done{name: vmi.Name, slow: usesSlow, err: err}
		})
	}
	for range vmis / 2 {
		select {
		case d := <-finished:
			if d.err != nil {
				t.Fatalf("%s: %v", d.name, d.err)
			}
			if d.slow {
				t.Fatalf("%s returned while the slow server held its call", d.name)
			}
		case <-time.After(pollTimeout):
			t.Fatalf("fast-only dispatches still running after %s, while the slow server holds the others", pollTimeout)
		}
	}
	close(release)
	wg.Wait()
	close(finished)
	for d := range finished {
		if d.err != nil {
			t.Fatalf("%s: %v", d.name, d.err)
		}
	}
	if n := len(readEvents(t, fast.Events)); n != vmis {
		t.Fatalf("fast server recorded %d calls, want %d", n, vmis)
	}
	if n := slow.calls.Load(); n != vmis/2 {
		t.Fatalf("slow server got %d calls, want %d", n, vmis/2)
	}
}

// holdingServer is a node hook server that holds every call until release
// is closed.
type holdingServer struct {
	release <-chan struct{}
	calls   atomic.Int32
}

func (h *holdingServer) ExecuteNodeHook(ctx context.Context, _ *sdk.NodeHookRequest) error {
	h.calls.Add(1)
	select {
	case <-h.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// serveNodeHooks serves handler, in the test process, on hook.sock in dir
// below this test run's directory until the test ends, and returns the
// socket's path.
func serveNodeHooks(t *testing.T, dir string, handler sdk.NodeHookHandler) string {
	t.Helper()
	srv, err := sdk.NewNodeServer(filepath.Join(runDir(t), dir, "hook.sock"), handler)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("node hook server %s: %v", dir, err)
		}
	})
	return srv.SocketPath()
}
