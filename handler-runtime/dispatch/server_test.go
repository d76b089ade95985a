// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubevirt-plugins/framework/handler-runtime/store"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// seenCall is one call as a test node hook server saw it.
type seenCall struct {
	Server    string
	HookPoint string
	VMI       string
	Node      string
}

// journal is the order in which all test servers of one test were called.
type journal struct {
	mu      sync.Mutex
	records []seenCall
}

func (j *journal) add(r seenCall) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.records = append(j.records, r)
}

func (j *journal) all() []seenCall {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]seenCall(nil), j.records...)
}

// hookServer is a real NodeHookService on a Unix socket.
type hookServer struct {
	hooksv1alpha1.UnimplementedNodeHookServiceServer
	name    string
	journal *journal
	// fail makes every call return this code, with failMessage as the
	// message ("failing on purpose" when empty).
	fail        codes.Code
	failMessage string
	// unavailableFor names a VMI the server answers with Unavailable, as
	// a plugin whose backend for that one VMI is down does.
	unavailableFor string
	// hold, when set, keeps every call waiting until the caller gives up.
	hold bool
	// release, when set, keeps every call waiting until it is closed;
	// entered receives the VMI name of each call as it starts waiting.
	release chan struct{}
	entered chan string
	grpc    *grpc.Server
	// open counts the connections the server holds, accepted all it
	// accepted.
	open, accepted atomic.Int32
}

func (s *hookServer) ExecuteNodeHook(ctx context.Context, req *hooksv1alpha1.ExecuteNodeHookRequest) (*hooksv1alpha1.ExecuteNodeHookResponse, error) {
	var vmi kubevirtv1.VirtualMachineInstance
	if err := json.Unmarshal(req.Vmi, &vmi); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "vmi: %v", err)
	}
	s.journal.add(seenCall{Server: s.name, HookPoint: req.HookPoint, VMI: vmi.Name, Node: req.GetNodeContext().GetNodeName()})
	if s.unavailableFor != "" && vmi.Name == s.unavailableFor {
		return nil, status.Error(codes.Unavailable, "backend for this VMI is down")
	}
	if s.hold {
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	if s.release != nil {
		s.entered <- vmi.Name
		select {
		case <-s.release:
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
	if s.fail != codes.OK {
		msg := s.failMessage
		if msg == "" {
			msg = "failing on purpose"
		}
		return nil, status.Error(s.fail, msg)
	}
	return &hooksv1alpha1.ExecuteNodeHookResponse{}, nil
}

// socketRoot is a short temporary directory standing in for /var/run/kubevirt.
func socketRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "dsp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// serve starts s on root/<s.name>.sock and returns the socket path.
func serve(t testing.TB, root string, s *hookServer) string {
	t.Helper()
	path := filepath.Join(root, s.name+".sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	s.grpc = grpc.NewServer()
	hooksv1alpha1.RegisterNodeHookServiceServer(s.grpc, s)
	go s.grpc.Serve(countingListener{Listener: l, open: &s.open, accepted: &s.accepted})
	t.Cleanup(s.grpc.Stop)
	return path
}

// countingListener keeps count of the connections it accepted that are
// not closed yet.
type countingListener struct {
	net.Listener
	open, accepted *atomic.Int32
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.open.Add(1)
	l.accepted.Add(1)
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

// staticPlugins is a PluginSource whose snapshot the test sets: directly
// while no dispatch runs, with set while dispatches do.
type staticPlugins struct {
	mu   sync.Mutex
	snap store.Snapshot
	err  error
}

func (s *staticPlugins) Snapshot() (store.Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snap, s.err
}

func (s *staticPlugins) set(snap store.Snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.snap = snap
}
