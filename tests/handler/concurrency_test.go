package handler

import (
	"fmt"
	"sync"
	"testing"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/handler-runtime/dispatch"
)

// TestSlowHookServerDoesNotDelayVMIsThatDoNotUseIt dispatches PreVMStart
// for 100 VMIs at once. Every VMI calls the fast server; the odd ones also
// call a server that takes 2 s per call. The order in which dispatches
// return shows the isolation: every fast-only dispatch returns before any
// dispatch that waits for the slow server.
func TestSlowHookServerDoesNotDelayVMIsThatDoNotUseIt(t *testing.T) {
	fast := startRecorder(t, "fast", "hook.sock", "fast")
	slow := startRecorder(t, "slow", "hook.sock", "slow", "--delay", "2s")
	slowHook := nodeHook(slow.Socket, pluginv1alpha1.PreVMStart)
	slowHook.Condition = `vmi.Labels["speed"] == "slow"`
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
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range vmis {
		usesSlow := i%2 == 1
		labels := map[string]string{"speed": "fast"}
		if usesSlow {
			labels["speed"] = "slow"
		}
		vmi := newVMI(fmt.Sprintf("vm-%03d", i), labels)
		wg.Go(func() {
			<-start
			err := dispatcher.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi, dispatch.NodeContext{NodeName: "n"})
			finished <- done{name: vmi.Name, slow: usesSlow, err: err}
		})
	}
	close(start)
	wg.Wait()
	close(finished)

	var order []done
	for d := range finished {
		if d.err != nil {
			t.Fatalf("%s: %v", d.name, d.err)
		}
		order = append(order, d)
	}
	firstSlow := -1
	for i, d := range order {
		if d.slow && firstSlow < 0 {
			firstSlow = i
		}
		if !d.slow && firstSlow >= 0 {
			t.Fatalf("fast-only %s returned after slow %s (position %d, first slow at %d)", d.name, order[firstSlow].name, i, firstSlow)
		}
	}
	if firstSlow != vmis/2 {
		t.Fatalf("first slow dispatch returned at position %d, want %d", firstSlow, vmis/2)
	}
	if n := len(readEvents(t, fast.Events)); n != vmis {
		t.Fatalf("fast server recorded %d calls, want %d", n, vmis)
	}
	if n := len(readEvents(t, slow.Events)); n != vmis/2 {
		t.Fatalf("slow server recorded %d calls, want %d", n, vmis/2)
	}
}
