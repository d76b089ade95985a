// SPDX-License-Identifier: Apache-2.0

package connpool

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/util/wait"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// server is a real node hook server on a Unix socket that counts the
// connections it accepted and the calls it served.
type server struct {
	hooksv1alpha1.UnimplementedNodeHookServiceServer
	grpc     *grpc.Server
	listener *net.UnixListener
	accepted atomic.Int32
	open     atomic.Int32 // accepted connections not closed yet
	calls    atomic.Int32
	// unavailableFor names the request (by its vmi bytes) the server
	// answers with Unavailable, as a plugin whose backend for one VMI is
	// down does.
	unavailableFor string
	// block, when set, holds every call until it is closed.
	block   chan struct{}
	entered chan struct{}
}

type countingListener struct {
	net.Listener
	n, open *atomic.Int32
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.n.Add(1)
	l.open.Add(1)
	return &countedConn{Conn: c, open: l.open}, nil
}

type countedConn struct {
	net.Conn
	open *atomic.Int32
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.open.Add(-1) })
	return c.Conn.Close()
}

func startServer(t *testing.T, path string) *server {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	s := &server{grpc: grpc.NewServer(), listener: l.(*net.UnixListener), entered: make(chan struct{}, 16)}
	hooksv1alpha1.RegisterNodeHookServiceServer(s.grpc, s)
	go s.grpc.Serve(countingListener{l, &s.accepted, &s.open})
	t.Cleanup(s.grpc.Stop)
	return s
}

func (s *server) ExecuteNodeHook(ctx context.Context, req *hooksv1alpha1.ExecuteNodeHookRequest) (*hooksv1alpha1.ExecuteNodeHookResponse, error) {
	s.calls.Add(1)
	if s.unavailableFor != "" && string(req.Vmi) == s.unavailableFor {
		return nil, status.Error(codes.Unavailable, "backend for this VMI is down")
	}
	if s.block != nil {
		s.entered <- struct{}{}
		select {
		case <-s.block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &hooksv1alpha1.ExecuteNodeHookResponse{}, nil
}

func execute(ctx context.Context, cc grpc.ClientConnInterface) error {
	return executeFor("")(ctx, cc)
}

// executeFor calls the hook with vmi as the request's VMI bytes.
func executeFor(vmi string) func(context.Context, grpc.ClientConnInterface) error {
	return func(ctx context.Context, cc grpc.ClientConnInterface) error {
		_, err := hooksv1alpha1.NewNodeHookServiceClient(cc).ExecuteNodeHook(ctx,
			&hooksv1alpha1.ExecuteNodeHookRequest{HookPoint: "PreVMStart", Vmi: []byte(vmi)})
		return err
	}
}

// waitClosed waits until the server holds no open connection, and fails
// the test when one is still open after a generous while.
func waitClosed(t *testing.T, s *server) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return s.open.Load() == 0, nil
	}); err != nil {
		t.Fatalf("server still holds %d open connections that the pool never closed: %v", s.open.Load(), err)
	}
}

func socketDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "cp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// countingDial counts how often the pool dials.
func countingDial(n *atomic.Int32) func(string, ...grpc.DialOption) (*grpc.ClientConn, error) {
	return func(path string, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
		n.Add(1)
		return Dial(path, opts...)
	}
}

func TestConnectionIsReusedAcrossCalls(t *testing.T) {
	path := filepath.Join(socketDir(t), "hook.sock")
	srv := startServer(t, path)
	var dials atomic.Int32
	p := New(Options{Dial: countingDial(&dials)})
	defer p.Close()

	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if err := p.Call(t.Context(), path, execute); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := srv.calls.Load(); got != 20 {
		t.Fatalf("server saw %d calls, want 20", got)
	}
	if d, a := dials.Load(), srv.accepted.Load(); d != 1 || a != 1 {
		t.Fatalf("dials = %d, accepted connections = %d; want one of each", d, a)
	}
}

func TestRestartedServerIsReachedOnNextCall(t *testing.T) {
	path := filepath.Join(socketDir(t), "hook.sock")
	first := startServer(t, path)
	var dials atomic.Int32
	p := New(Options{Dial: countingDial(&dials)})
	defer p.Close()
	if err := p.Call(t.Context(), path, execute); err != nil {
		t.Fatal(err)
	}

	first.grpc.Stop() // closes the listener, which unlinks the socket
	second := startServer(t, path)

	if err := p.Call(t.Context(), path, execute); err != nil {
		t.Fatalf("first call after the restart: %v", err)
	}
	if second.calls.Load() != 1 {
		t.Fatalf("restarted server saw %d calls, want 1", second.calls.Load())
	}
	if err := p.Call(t.Context(), path, execute); err != nil {
		t.Fatal(err)
	}
	if a := second.accepted.Load(); a != 1 {
		t.Fatalf("restarted server accepted %d connections, want 1 reused", a)
	}
}

func TestServerThatWasDownIsRedialedWhenBack(t *testing.T) {
	path := filepath.Join(socketDir(t), "hook.sock")
	p := New(Options{})
	defer p.Close()

	err := p.Call(t.Context(), path, execute)
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("call with no server = %v, want Unavailable", err)
	}
	srv := startServer(t, path)
	if err := p.Call(t.Context(), path, execute); err != nil {
		t.Fatalf("call once the server is up: %v", err)
	}
	if srv.calls.Load() != 1 {
		t.Fatalf("server saw %d calls, want 1", srv.calls.Load())
	}
}

func TestBusySocketQueuesOnlyItsOwnCalls(t *testing.T) {
	dir := socketDir(t)
	slowPath, fastPath := filepath.Join(dir, "slow.sock"), filepath.Join(dir, "fast.sock")
	slow := startServer(t, slowPath)
	slow.block = make(chan struct{})
	startServer(t, fastPath)
	p := New(Options{MaxInFlight: 1})
	defer p.Close()

	slowDone := make(chan error, 1)
	go func() { slowDone <- p.Call(t.Context(), slowPath, execute) }()
	<-slow.entered // the only slot of slow.sock is taken

	if err := p.Call(t.Context(), fastPath, execute); err != nil {
		t.Fatalf("call to the other socket while slow.sock is busy: %v", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	queued := make(chan error, 1)
	go func() { queued <- p.Call(ctx, slowPath, execute) }()
	cancel()
	if err := <-queued; !errors.Is(err, context.Canceled) {
		t.Fatalf("queued call on the busy socket = %v, want it to wait for a slot until canceled", err)
	}
	if n := slow.calls.Load(); n != 1 {
		t.Fatalf("slow server saw %d calls, want only the one holding the slot", n)
	}
	close(slow.block)
	if err := <-slowDone; err != nil {
		t.Fatal(err)
	}
}

func TestClosedPoolRefusesCalls(t *testing.T) {
	p := New(Options{})
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Call(t.Context(), "/nonexistent.sock", execute); !errors.Is(err, ErrClosed) {
		t.Fatalf("Call after Close = %v, want ErrClosed", err)
	}
}

func TestForgetClosesIdleConnectionsOnly(t *testing.T) {
	dir := socketDir(t)
	idlePath, busyPath := filepath.Join(dir, "idle.sock"), filepath.Join(dir, "busy.sock")
	idle := startServer(t, idlePath)
	busy := startServer(t, busyPath)
	busy.block = make(chan struct{})
	var dials atomic.Int32
	p := New(Options{Dial: countingDial(&dials)})
	defer p.Close()
	if err := p.Call(t.Context(), idlePath, execute); err != nil {
		t.Fatal(err)
	}
	busyDone := make(chan error, 1)
	go func() { busyDone <- p.Call(t.Context(), busyPath, execute) }()
	<-busy.entered

	p.Forget(func(string) bool { return false })
	close(busy.block)
	if err := <-busyDone; err != nil {
		t.Fatalf("call in flight during Forget: %v", err)
	}
	if err := p.Call(t.Context(), idlePath, execute); err != nil {
		t.Fatal(err)
	}
	if d, a := dials.Load(), idle.accepted.Load(); d != 3 || a != 2 {
		t.Fatalf("dials = %d, idle server accepted %d; want the forgotten idle connection dialed again", d, a)
	}
}

func TestServerStatusIsTheAnswerOfOneCallAndLeavesTheConnectionToTheOthers(t *testing.T) {
	path := filepath.Join(socketDir(t), "hook.sock")
	srv := startServer(t, path)
	srv.unavailableFor = "vm-down"
	srv.block = make(chan struct{})
	srv.entered = make(chan struct{}, 32)
	var dials atomic.Int32
	p := New(Options{Dial: countingDial(&dials)})
	defer p.Close()

	const inFlight = 20
	errs := make(chan error, inFlight)
	for i := range inFlight {
		go func() { errs <- p.Call(t.Context(), path, executeFor(fmt.Sprintf("vm-%d", i))) }()
	}
	for range inFlight {
		<-srv.entered
	}
	// All twenty sit in the server; the server now answers one other VMI
	// with Unavailable.
	if err := p.Call(t.Context(), path, executeFor("vm-down")); status.Code(err) != codes.Unavailable {
		t.Fatalf("call for vm-down = %v, want the server's Unavailable", err)
	}
	close(srv.block)
	for range inFlight {
		if err := <-errs; err != nil {
			t.Errorf("call in flight while another VMI got Unavailable: %v", err)
		}
	}
	if n := srv.calls.Load(); n != inFlight+1 {
		t.Fatalf("server saw %d calls, want %d: the server's Unavailable is not retried", n, inFlight+1)
	}
	if err := p.Call(t.Context(), path, execute); err != nil {
		t.Fatal(err)
	}
	if d, a := dials.Load(), srv.accepted.Load(); d != 1 || a != 1 {
		t.Fatalf("dials = %d, accepted = %d; want the one connection kept", d, a)
	}
}

func TestCloseLetsCallsInFlightFinishAndThenClosesTheirConnection(t *testing.T) {
	path := filepath.Join(socketDir(t), "hook.sock")
	srv := startServer(t, path)
	srv.block = make(chan struct{})
	p := New(Options{})
	done := make(chan error, 1)
	go func() { done <- p.Call(t.Context(), path, execute) }()
	<-srv.entered

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	close(srv.block)
	if err := <-done; err != nil {
		t.Fatalf("call in flight during Close: %v", err)
	}
	waitClosed(t, srv)
}

func TestForgetDuringALookupCannotOrphanTheConnectionTheCallDials(t *testing.T) {
	path := filepath.Join(socketDir(t), "hook.sock")
	srv := startServer(t, path)
	p := New(Options{})
	// The call has found the entry of its socket but holds no slot yet
	// when a prune forgets every socket.
	p.lookedUp = func() { p.Forget(func(string) bool { return false }) }
	if err := p.Call(t.Context(), path, execute); err != nil {
		t.Fatal(err)
	}
	if srv.open.Load() != 1 {
		t.Fatalf("server holds %d connections, want the call's one", srv.open.Load())
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, srv)
}

func TestCallCutOffByAServerRestartIsRetriedOnTheNewServer(t *testing.T) {
	path := filepath.Join(socketDir(t), "hook.sock")
	old := startServer(t, path)
	p := New(Options{})
	defer p.Close()
	if err := p.Call(t.Context(), path, execute); err != nil {
		t.Fatal(err)
	}

	// The call is in the old server when it is replaced: the new one
	// listens on the socket path, then the old one dies with the call.
	old.block = make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- p.Call(t.Context(), path, execute) }()
	<-old.entered
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	old.listener.SetUnlinkOnClose(false) // the path is the new server's now
	replacement := startServer(t, path)
	old.grpc.Stop()

	if err := <-done; err != nil {
		t.Fatalf("call cut off by the restart: %v", err)
	}
	if n := replacement.calls.Load(); n != 1 {
		t.Fatalf("new server saw %d calls, want the retried one", n)
	}
}
