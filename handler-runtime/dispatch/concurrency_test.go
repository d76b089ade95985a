// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/util/wait"
	kubevirtv1 "kubevirt.io/api/core/v1"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/handler-runtime/store"
)

func TestSlowServerHoldsUpOnlyTheVMIsThatUseIt(t *testing.T) {
	root := socketRoot(t)
	j := &journal{}
	slow := &hookServer{name: "slow", journal: j, release: make(chan struct{}), entered: make(chan string, 8)}
	slowSock := serve(t, root, slow)
	fastSock := serve(t, root, &hookServer{name: "fast", journal: j})
	slowHook := nodeHook(slowSock, pluginv1alpha1.PreVMStart)
	slowHook.Condition = `vmi.Labels["speed"] == "slow"`
	d, _ := newDispatcher(t, root, nil,
		plugin("fast", "", nodeHook(fastSock, pluginv1alpha1.PreVMStart)),
		plugin("slow", "", slowHook))

	slowDone := make(chan error, 1)
	go func() {
		slowDone <- d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi("vm-slow", map[string]string{"speed": "slow"}), NodeContext{})
	}()
	if name := <-slow.entered; name != "vm-slow" {
		t.Fatalf("slow server entered by %s", name)
	}
	// vm-slow now sits in the slow server. Other VMIs that only use the
	// fast server complete while it does.
	for _, name := range []string{"vm-a", "vm-b", "vm-c"} {
		if err := d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi(name, map[string]string{"speed": "fast"}), NodeContext{}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-slowDone:
		t.Fatalf("the slow dispatch returned (%v) before its server answered", err)
	default:
	}
	close(slow.release)
	if err := <-slowDone; err != nil {
		t.Fatal(err)
	}
}

// waitUntilWaiting waits until n dispatches of v wait for its lock.
func waitUntilWaiting(t *testing.T, d *Dispatcher, v *kubevirtv1.VirtualMachineInstance, n int) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return d.locks.Waiting(lockKey(v)) >= n, nil
	}); err != nil {
		t.Fatalf("%d dispatches of %s wait for its lock, want %d: %v", d.locks.Waiting(lockKey(v)), v.Name, n, err)
	}
}

func TestNodeHooksOfOneVMIRunOneAfterTheOtherWhateverTheHookPoint(t *testing.T) {
	root := socketRoot(t)
	j := &journal{}
	srv := &hookServer{name: "s", journal: j, release: make(chan struct{}), entered: make(chan string, 8)}
	sock := serve(t, root, srv)
	d, _ := newDispatcher(t, root, nil, plugin("p", "", nodeHook(sock, pluginv1alpha1.PreVMStart, pluginv1alpha1.OnVMStop)))
	v := vmi("vm", nil)

	start := make(chan error, 1)
	go func() { start <- d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, v, NodeContext{}) }()
	<-srv.entered

	// The host reports the stop while PreVMStart's hook still runs: the
	// OnVMStop dispatch waits for it ...
	stop := make(chan error, 1)
	go func() { stop <- d.Dispatch(t.Context(), pluginv1alpha1.OnVMStop, v, NodeContext{}) }()
	// ... and so does a retry whose host gives up waiting, calling nothing.
	ctx, cancel := context.WithCancel(t.Context())
	retry := make(chan error, 1)
	go func() { retry <- d.Dispatch(ctx, pluginv1alpha1.PreVMStart, v, NodeContext{}) }()
	waitUntilWaiting(t, d, v, 2)
	// Another VMI goes ahead meanwhile.
	other := make(chan error, 1)
	go func() {
		other <- d.Dispatch(t.Context(), pluginv1alpha1.OnVMStop, vmi("vm-2", nil), NodeContext{})
	}()
	if name := <-srv.entered; name != "vm-2" {
		t.Fatalf("server entered by %s while vm's PreVMStart still ran, want vm-2", name)
	}
	cancel()
	if err := <-retry; !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "waiting for the VMI's dispatch in progress") {
		t.Fatalf("retry given up while waiting = %v, want an error saying it waited for the VMI", err)
	}
	if got := j.all(); len(got) != 2 {
		t.Fatalf("server saw %+v; want vm's PreVMStart and vm-2's OnVMStop only", got)
	}

	close(srv.release)
	for _, c := range []chan error{start, stop, other} {
		if err := <-c; err != nil {
			t.Fatal(err)
		}
	}
	var ofVM []string
	for _, r := range j.all() {
		if r.VMI == "vm" {
			ofVM = append(ofVM, r.HookPoint)
		}
	}
	if want := []string{"PreVMStart", "OnVMStop"}; !slices.Equal(ofVM, want) {
		t.Fatalf("vm's hook calls = %v, want %v", ofVM, want)
	}
}

func TestDispatchReadsThePluginsOnceItsWaitForTheVMIIsOver(t *testing.T) {
	root := socketRoot(t)
	j := &journal{}
	held := &hookServer{name: "held", journal: j, release: make(chan struct{}), entered: make(chan string, 8)}
	heldSock := serve(t, root, held)
	deletedSock := serve(t, root, &hookServer{name: "deleted", journal: j})
	addedSock := serve(t, root, &hookServer{name: "added", journal: j})
	stopHook := func(sock string) pluginv1alpha1.NodeHook { return nodeHook(sock, pluginv1alpha1.OnVMStop) }
	holder := plugin("a-holder", "", nodeHook(heldSock, pluginv1alpha1.PreVMStart))
	d, src := newDispatcher(t, root, nil, holder, plugin("deleted", "", stopHook(deletedSock)))
	v := vmi("vm", nil)

	start := make(chan error, 1)
	go func() { start <- d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, v, NodeContext{}) }()
	<-held.entered
	stop := make(chan error, 1)
	go func() { stop <- d.Dispatch(t.Context(), pluginv1alpha1.OnVMStop, v, NodeContext{}) }()
	waitUntilWaiting(t, d, v, 1)

	// While OnVMStop waits, one Plugin is deleted and another created.
	src.set(store.Snapshot{Enabled: true, Revision: 2, Plugins: []*pluginv1alpha1.Plugin{
		plugin("added", "", stopHook(addedSock)), holder,
	}})
	close(held.release)
	if err := <-start; err != nil {
		t.Fatal(err)
	}
	if err := <-stop; err != nil {
		t.Fatal(err)
	}
	var servers []string
	for _, r := range j.all() {
		if r.HookPoint == "OnVMStop" {
			servers = append(servers, r.Server)
		}
	}
	if !slices.Equal(servers, []string{"added"}) {
		t.Fatalf("OnVMStop reached %v, want only the Plugin that exists when it runs (added)", servers)
	}
}

func TestStaleSnapshotDoesNotPruneConnectionsOfANewerRevision(t *testing.T) {
	root := socketRoot(t)
	j := &journal{}
	oldSrv := &hookServer{name: "old", journal: j}
	newSrv := &hookServer{name: "new", journal: j}
	oldSock, newSock := serve(t, root, oldSrv), serve(t, root, newSrv)
	d, src := newDispatcher(t, root, nil)
	rev1 := store.Snapshot{Enabled: true, Revision: 1, Plugins: []*pluginv1alpha1.Plugin{plugin("p", "", nodeHook(oldSock, pluginv1alpha1.PreVMStart))}}
	rev2 := store.Snapshot{Enabled: true, Revision: 2, Plugins: []*pluginv1alpha1.Plugin{plugin("p", "", nodeHook(newSock, pluginv1alpha1.PreVMStart))}}

	src.set(rev2)
	if err := d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi("vm-a", nil), NodeContext{}); err != nil {
		t.Fatal(err)
	}
	// A dispatch that read the Plugins just before the change (revision 1)
	// comes after one that read revision 2.
	src.set(rev1)
	if err := d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi("vm-b", nil), NodeContext{}); err != nil {
		t.Fatal(err)
	}
	src.set(rev2)
	if err := d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi("vm-c", nil), NodeContext{}); err != nil {
		t.Fatal(err)
	}
	if a := newSrv.accepted.Load(); a != 1 {
		t.Fatalf("the server of revision 2 accepted %d connections, want its one pooled connection kept", a)
	}
}

func TestOneVMIsUnavailableAnswerFailsOnlyThatVMI(t *testing.T) {
	root := socketRoot(t)
	j := &journal{}
	srv := &hookServer{name: "s", journal: j, unavailableFor: "vm-down", release: make(chan struct{}), entered: make(chan string, 32)}
	sock := serve(t, root, srv)
	failHook := nodeHook(sock, pluginv1alpha1.PreVMStart)
	failHook.FailureStrategy = pluginv1alpha1.Fail
	d, _ := newDispatcher(t, root, nil, plugin("p", "", failHook))

	const inFlight = 20
	errs := make(chan error, inFlight)
	for i := range inFlight {
		go func() {
			errs <- d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi(fmt.Sprintf("vm-%d", i), nil), NodeContext{})
		}()
	}
	for range inFlight {
		<-srv.entered
	}
	// Twenty PreVMStart calls sit in the server, on the one pooled
	// connection, when the server answers another VMI with Unavailable.
	err := d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi("vm-down", nil), NodeContext{})
	var herr *HookError
	if !errors.As(err, &herr) || status.Code(herr.Err) != codes.Unavailable {
		t.Fatalf("dispatch for vm-down = %v, want the server's Unavailable as a HookError", err)
	}
	close(srv.release)
	for range inFlight {
		if err := <-errs; err != nil {
			t.Errorf("dispatch in flight while another VMI got Unavailable: %v", err)
		}
	}
	if n := srv.open.Load(); n != 1 {
		t.Fatalf("server holds %d connections, want the one pooled connection kept", n)
	}
}

func TestRestartedNodeHookServerIsReachedByTheNextDispatch(t *testing.T) {
	root := socketRoot(t)
	j := &journal{}
	first := &hookServer{name: "s", journal: j}
	sock := serve(t, root, first)
	d, _ := newDispatcher(t, root, nil, plugin("p", "", nodeHook(sock, pluginv1alpha1.PreVMStart)))
	if err := d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi("vm-1", nil), NodeContext{}); err != nil {
		t.Fatal(err)
	}
	first.grpc.Stop() // unlinks the socket
	serve(t, root, &hookServer{name: "s", journal: j})
	if err := d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi("vm-2", nil), NodeContext{}); err != nil {
		t.Fatalf("first dispatch after the server restarted: %v", err)
	}
	if got := j.all(); len(got) != 2 || got[1].VMI != "vm-2" {
		t.Fatalf("calls = %+v, want vm-2 to reach the restarted server", got)
	}
}

func TestWaitForTheVMIsDispatchInProgressIsMeasured(t *testing.T) {
	root := socketRoot(t)
	srv := &hookServer{name: "s", journal: &journal{}, release: make(chan struct{}), entered: make(chan string, 8)}
	sock := serve(t, root, srv)
	reg := prometheus.NewRegistry()
	d, _ := newDispatcher(t, root, reg, plugin("p", "", nodeHook(sock, pluginv1alpha1.PreVMStart, pluginv1alpha1.OnVMStop)))
	v := vmi("vm", nil)

	start := make(chan error, 1)
	go func() { start <- d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, v, NodeContext{}) }()
	<-srv.entered
	stop := make(chan error, 1)
	go func() { stop <- d.Dispatch(t.Context(), pluginv1alpha1.OnVMStop, v, NodeContext{}) }()
	waitUntilWaiting(t, d, v, 1)
	const held = 100 * time.Millisecond
	time.Sleep(held) // PreVMStart's hook keeps running at least this long
	close(srv.release)
	for _, c := range []chan error{start, stop} {
		if err := <-c; err != nil {
			t.Fatal(err)
		}
	}
	h := histogram(t, reg, MetricVMIWait, map[string]string{"hook_point": "OnVMStop"})
	if h.GetSampleCount() != 1 || h.GetSampleSum() < held.Seconds() {
		t.Fatalf("OnVMStop wait: %d samples summing to %gs, want one of at least %s", h.GetSampleCount(), h.GetSampleSum(), held)
	}
}
