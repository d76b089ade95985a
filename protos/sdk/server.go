// SPDX-License-Identifier: Apache-2.0

package sdk

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// Server serves hooks on one Unix socket. The socket exists once
// NewLauncherServer or NewNodeServer returns; Serve then answers calls until
// its context is cancelled.
type Server struct {
	name        string
	socket      string
	listener    *net.UnixListener
	socketInfo  os.FileInfo
	grpc        *grpc.Server
	log         logr.Logger
	opts        options
	implemented []string
}

// ServeLauncherHooks serves the launcher hooks handler implements on
// <root>/<pluginName>/<socket name> until ctx is cancelled, then stops
// gracefully and removes the socket. handler must implement at least one of
// GuestDefinitionHandler, PreBootHandler and PreMigrationSourceHandler; the
// RPCs of the others answer codes.Unimplemented.
func ServeLauncherHooks(ctx context.Context, pluginName string, handler any, opts ...Option) error {
	s, err := NewLauncherServer(pluginName, handler, opts...)
	if err != nil {
		return err
	}
	return s.Serve(ctx)
}

// ServeNodeHooks serves handler on socketPath until ctx is cancelled, then
// stops gracefully and removes the socket.
func ServeNodeHooks(ctx context.Context, socketPath string, handler NodeHookHandler, opts ...Option) error {
	s, err := NewNodeServer(socketPath, handler, opts...)
	if err != nil {
		return err
	}
	return s.Serve(ctx)
}

// NewLauncherServer creates the plugin directory and the socket and
// registers the launcher hook RPCs handler implements; see
// ServeLauncherHooks.
func NewLauncherServer(pluginName string, handler any, opts ...Option) (*Server, error) {
	o := newOptions(opts)
	implemented := ImplementedLauncherHooks(handler)
	if len(implemented) == 0 {
		return nil, fmt.Errorf("plugin %s: handler %T implements no launcher hook (GuestDefinitionHandler, PreBootHandler or PreMigrationSourceHandler)", pluginName, handler)
	}
	path, err := LauncherSocketPath(o.socketRoot, pluginName, o.socketName)
	if err != nil {
		return nil, err
	}
	name := "plugin " + pluginName
	svc := &launcherService{plugin: pluginName, handler: handler}
	desc := hooksv1alpha1.LauncherHookService_ServiceDesc
	desc.Methods = nil
	for _, m := range hooksv1alpha1.LauncherHookService_ServiceDesc.Methods {
		for _, h := range implemented {
			if m.MethodName == h {
				desc.Methods = append(desc.Methods, m)
			}
		}
	}
	return newServer(name, path, o, implemented, func(g *grpc.Server) { g.RegisterService(&desc, svc) })
}

// NewNodeServer creates the socket (and its directory, mode 0750, when
// missing) and registers handler; see ServeNodeHooks.
func NewNodeServer(socketPath string, handler NodeHookHandler, opts ...Option) (*Server, error) {
	if handler == nil {
		return nil, fmt.Errorf("node hook server %s: no handler", socketPath)
	}
	if err := checkSocketPath(socketPath); err != nil {
		return nil, fmt.Errorf("node hook server: %w", err)
	}
	o := newOptions(opts)
	svc := &nodeService{socket: socketPath, handler: handler}
	return newServer("node hook server "+socketPath, socketPath, o, []string{"ExecuteNodeHook"}, func(g *grpc.Server) {
		hooksv1alpha1.RegisterNodeHookServiceServer(g, svc)
	})
}

func newServer(name, path string, o options, implemented []string, register func(*grpc.Server)) (*Server, error) {
	chain, metrics, err := interceptorChain(name, o)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Server, error) {
		if metrics != nil {
			o.registerer.Unregister(metrics)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	l, err := listenUnix(path)
	if err != nil {
		return fail(err)
	}
	// The socket is removed by Serve, and only if it is still ours.
	l.SetUnlinkOnClose(false)
	fi, err := os.Stat(path)
	if err != nil {
		_ = l.Close()
		return fail(err)
	}
	g := grpc.NewServer(chain, grpc.MaxRecvMsgSize(MaxMessageSize), grpc.MaxSendMsgSize(MaxMessageSize))
	register(g)
	if metrics != nil {
		metrics.initialize(g)
	}
	return &Server{
		name: name, socket: path, listener: l, socketInfo: fi, grpc: g,
		log: o.logger.WithValues("socket", path), opts: o, implemented: implemented,
	}, nil
}

// SocketPath is the socket the server listens on.
func (s *Server) SocketPath() string { return s.socket }

// Implemented lists the RPCs registered (for launcher servers, the hook
// points the handler implements).
func (s *Server) Implemented() []string { return append([]string(nil), s.implemented...) }

// Serve answers calls until ctx is cancelled, then lets in-flight calls
// finish (at most the grace period, see WithGracePeriod), stops and removes
// the socket. A cancelled ctx is a clean stop and returns nil. Call Serve
// once.
func (s *Server) Serve(ctx context.Context) error {
	s.log.Info("serving hooks", "server", s.name, "rpcs", s.implemented)
	done := make(chan error, 1)
	go func() { done <- s.grpc.Serve(s.listener) }()
	var serveErr error
	select {
	case serveErr = <-done:
	case <-ctx.Done():
		s.stop()
		if err := <-done; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			serveErr = err
		}
	}
	s.removeSocket()
	if serveErr != nil {
		return fmt.Errorf("%s: serve: %w", s.name, serveErr)
	}
	s.log.Info("stopped serving hooks", "server", s.name)
	return nil
}

func (s *Server) stop() {
	stopped := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(stopped)
	}()
	grace := time.NewTimer(s.opts.gracePeriod)
	defer grace.Stop()
	select {
	case <-stopped:
	case <-grace.C:
		s.log.Info("grace period over, cutting off in-flight calls", "server", s.name, "gracePeriod", s.opts.gracePeriod)
		s.grpc.Stop()
		<-stopped
	}
}

// removeSocket removes the socket unless another server has replaced it.
func (s *Server) removeSocket() {
	fi, err := os.Stat(s.socket)
	if err != nil || !os.SameFile(fi, s.socketInfo) {
		return
	}
	if err := os.Remove(s.socket); err != nil {
		s.log.Error(err, "removing socket", "server", s.name)
	}
}
