package dispatch

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
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
		slowDone <- d.Dispatch(context.Background(), pluginv1alpha1.PreVMStart, vmi("vm-slow", map[string]string{"speed": "slow"}), NodeContext{})
	}()
	if name := <-slow.entered; name != "vm-slow" {
		t.Fatalf("slow server entered by %s", name)
	}
	// vm-slow now sits in the slow server. Other VMIs that only use the
	// fast server complete while it does.
	for _, name := range []string{"vm-a", "vm-b", "vm-c"} {
		if err := d.Dispatch(context.Background(), pluginv1alpha1.PreVMStart, vmi(name, map[string]string{"speed": "fast"}), NodeContext{}); err != nil {
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

func TestDispatchesOfOneVMIAndHookPointRunOneAfterTheOther(t *testing.T) {
	root := socketRoot(t)
	j := &journal{}
	srv := &hookServer{name: "s", journal: j, release: make(chan struct{}), entered: make(chan string, 8)}
	sock := serve(t, root, srv)
	d, _ := newDispatcher(t, root, nil, plugin("p", "", nodeHook(sock, pluginv1alpha1.PreVMStart, pluginv1alpha1.PostVMStart)))
	v := vmi("vm", nil)

	first := make(chan error, 1)
	go func() { first <- d.Dispatch(context.Background(), pluginv1alpha1.PreVMStart, v, NodeContext{}) }()
	<-srv.entered

	// A retry of the same event waits for the first dispatch ...
	ctx, cancel := context.WithCancel(context.Background())
	retry := make(chan error, 1)
	go func() { retry <- d.Dispatch(ctx, pluginv1alpha1.PreVMStart, v, NodeContext{}) }()
	// ... while another hook point of the same VMI, and another VMI, go ahead.
	other := make(chan error, 2)
	go func() { other <- d.Dispatch(context.Background(), pluginv1alpha1.PostVMStart, v, NodeContext{}) }()
	go func() {
		other <- d.Dispatch(context.Background(), pluginv1alpha1.PreVMStart, vmi("vm-2", nil), NodeContext{})
	}()
	<-srv.entered
	<-srv.entered
	if n := len(j.all()); n != 3 {
		t.Fatalf("server saw %d calls, want 3: the retry must not have reached it", n)
	}
	cancel()
	if err := <-retry; err == nil {
		t.Fatal("the retry ran although the first dispatch of its VMI and hook point still did")
	}
	close(srv.release)
	for _, c := range []chan error{first, other, other} {
		if err := <-c; err != nil {
			t.Fatal(err)
		}
	}
	if n := len(j.all()); n != 3 {
		t.Fatalf("server saw %d calls, want 3", n)
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
			errs <- d.Dispatch(context.Background(), pluginv1alpha1.PreVMStart, vmi(fmt.Sprintf("vm-%d", i), nil), NodeContext{})
		}()
	}
	for range inFlight {
		<-srv.entered
	}
	// Twenty PreVMStart calls sit in the server, on the one pooled
	// connection, when the server answers another VMI with Unavailable.
	err := d.Dispatch(context.Background(), pluginv1alpha1.PreVMStart, vmi("vm-down", nil), NodeContext{})
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
	if err := d.Dispatch(context.Background(), pluginv1alpha1.PreVMStart, vmi("vm-1", nil), NodeContext{}); err != nil {
		t.Fatal(err)
	}
	first.grpc.Stop() // unlinks the socket
	serve(t, root, &hookServer{name: "s", journal: j})
	if err := d.Dispatch(context.Background(), pluginv1alpha1.PreVMStart, vmi("vm-2", nil), NodeContext{}); err != nil {
		t.Fatalf("first dispatch after the server restarted: %v", err)
	}
	if got := j.all(); len(got) != 2 || got[1].VMI != "vm-2" {
		t.Fatalf("calls = %+v, want vm-2 to reach the restarted server", got)
	}
}
