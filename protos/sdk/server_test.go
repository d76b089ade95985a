// SPDX-License-Identifier: Apache-2.0

package sdk_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"libvirt.org/go/libvirtxml"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
	"github.com/kubevirt-plugins/framework/protos/sdk"
	"github.com/kubevirt-plugins/framework/protos/sdk/sdktest"
)

// shortDir returns a temporary directory short enough for socket paths.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sdk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

type serving struct {
	srv    *sdk.Server
	cancel context.CancelFunc
	done   chan error
}

// start serves handler as plugin "demo" under root and returns the running
// server; stop it with stop().
func start(t *testing.T, root string, handler any, opts ...sdk.Option) *serving {
	t.Helper()
	srv, err := sdk.NewLauncherServer("demo", handler, append([]sdk.Option{sdk.WithSocketRoot(root)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	s := &serving{srv: srv, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- srv.Serve(ctx) }()
	t.Cleanup(func() { _ = s.stop() })
	return s
}

func (s *serving) stop() error {
	s.cancel()
	err, ok := <-s.done
	if ok {
		close(s.done)
	}
	return err
}

func client(t *testing.T, socket string) hooksv1alpha1.LauncherHookServiceClient {
	t.Helper()
	conn, err := sdktest.Dial(socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return hooksv1alpha1.NewLauncherHookServiceClient(conn)
}

type guestDefFunc func(context.Context, *sdk.GuestDefinitionRequest) (*libvirtxml.Domain, error)

func (f guestDefFunc) GuestDefinition(ctx context.Context, r *sdk.GuestDefinitionRequest) (*libvirtxml.Domain, error) {
	return f(ctx, r)
}

type preBootFunc func(context.Context, *sdk.PreBootRequest) error

func (f preBootFunc) PreBoot(ctx context.Context, r *sdk.PreBootRequest) error { return f(ctx, r) }

type preMigrationFunc func(context.Context, *sdk.PreMigrationSourceRequest) (*sdk.MigrationChanges, error)

func (f preMigrationFunc) PreMigrationSource(ctx context.Context, r *sdk.PreMigrationSourceRequest) (*sdk.MigrationChanges, error) {
	return f(ctx, r)
}

func gdRequest(labels map[string]string) *hooksv1alpha1.GuestDefinitionRequest {
	return &hooksv1alpha1.GuestDefinitionRequest{
		DomainXml:      []byte(sdktest.MinimalDomainXML),
		Vmi:            sdktest.VMIJSON("ns1", "vm1", labels, nil),
		SidecarContext: &hooksv1alpha1.SidecarContext{InvocationContext: "MigrationTarget"},
	}
}

func TestServeCreatesSocketInPluginDir(t *testing.T) {
	root := shortDir(t)
	s := start(t, root, preBootFunc(func(context.Context, *sdk.PreBootRequest) error { return nil }))
	want := filepath.Join(root, "demo", "hook.sock")
	if s.srv.SocketPath() != want {
		t.Fatalf("socket path = %s, want %s", s.srv.SocketPath(), want)
	}
	dir, err := os.Stat(filepath.Join(root, "demo"))
	if err != nil {
		t.Fatal(err)
	}
	if dir.Mode().Perm() != 0o750 {
		t.Errorf("plugin directory mode = %v, want 0750", dir.Mode().Perm())
	}
	sock, err := os.Stat(want)
	if err != nil {
		t.Fatal(err)
	}
	if sock.Mode()&os.ModeSocket == 0 || sock.Mode().Perm() != 0o660 {
		t.Errorf("socket mode = %v, want a socket with 0660", sock.Mode())
	}
}

func TestServeHonoursSocketName(t *testing.T) {
	root := shortDir(t)
	s := start(t, root, preBootFunc(func(context.Context, *sdk.PreBootRequest) error { return nil }), sdk.WithSocketName("other.sock"))
	if want := filepath.Join(root, "demo", "other.sock"); s.srv.SocketPath() != want {
		t.Fatalf("socket path = %s, want %s", s.srv.SocketPath(), want)
	}
}

func TestServeRejectsInvalidNames(t *testing.T) {
	h := preBootFunc(func(context.Context, *sdk.PreBootRequest) error { return nil })
	cases := []struct {
		name, plugin, socket string
	}{
		{"empty plugin name", "", "hook.sock"},
		{"slash in plugin name", "a/b", "hook.sock"},
		{"dot-dot plugin name", "..", "hook.sock"},
		{"upper case plugin name", "Demo", "hook.sock"},
		{"socket name without .sock", "demo", "hook"},
		{"socket name with a directory", "demo", "x/hook.sock"},
		{"path longer than 108 bytes", "demo", strings.Repeat("s", 110) + ".sock"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sdk.NewLauncherServer(tc.plugin, h, sdk.WithSocketRoot(shortDir(t)), sdk.WithSocketName(tc.socket))
			if err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func TestServeRejectsHandlerWithoutHooks(t *testing.T) {
	_, err := sdk.NewLauncherServer("demo", struct{}{}, sdk.WithSocketRoot(shortDir(t)))
	if err == nil || !strings.Contains(err.Error(), "implements no launcher hook") {
		t.Fatalf("err = %v, want an error naming the missing interfaces", err)
	}
}

func TestServeRegistersOnlyImplementedRPCs(t *testing.T) {
	s := start(t, shortDir(t), preBootFunc(func(context.Context, *sdk.PreBootRequest) error { return nil }))
	cl := client(t, s.srv.SocketPath())
	ctx := t.Context()
	if _, err := cl.PreBoot(ctx, &hooksv1alpha1.PreBootRequest{Vmi: sdktest.VMIJSON("ns1", "vm1", nil, nil)}); err != nil {
		t.Errorf("PreBoot: %v", err)
	}
	if _, err := cl.GuestDefinition(ctx, gdRequest(nil)); status.Code(err) != codes.Unimplemented {
		t.Errorf("GuestDefinition answered %v, want Unimplemented", err)
	}
	if _, err := cl.PreMigrationSource(ctx, &hooksv1alpha1.PreMigrationSourceRequest{Vmi: sdktest.VMIJSON("ns1", "vm1", nil, nil)}); status.Code(err) != codes.Unimplemented {
		t.Errorf("PreMigrationSource answered %v, want Unimplemented", err)
	}
	if got := s.srv.Implemented(); len(got) != 1 || got[0] != sdk.HookPreBoot {
		t.Errorf("Implemented() = %v, want [PreBoot]", got)
	}
}

func TestServeRemovesStaleSocket(t *testing.T) {
	root := shortDir(t)
	path := filepath.Join(root, "demo", "hook.sock")
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	_ = l.Close() // the file stays, nobody answers: a crashed server's socket
	s := start(t, root, preBootFunc(func(context.Context, *sdk.PreBootRequest) error { return nil }))
	if _, err := client(t, s.srv.SocketPath()).PreBoot(t.Context(), &hooksv1alpha1.PreBootRequest{Vmi: sdktest.VMIJSON("ns1", "vm1", nil, nil)}); err != nil {
		t.Fatalf("PreBoot over the replaced socket: %v", err)
	}
}

func TestServeRefusesSocketInUse(t *testing.T) {
	root := shortDir(t)
	h := preBootFunc(func(context.Context, *sdk.PreBootRequest) error { return nil })
	start(t, root, h)
	if _, err := sdk.NewLauncherServer("demo", h, sdk.WithSocketRoot(root)); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second server on a live socket: err = %v, want in use", err)
	}
}

func TestGracefulStopRemovesSocket(t *testing.T) {
	s := start(t, shortDir(t), preBootFunc(func(context.Context, *sdk.PreBootRequest) error { return nil }))
	if err := s.stop(); err != nil {
		t.Fatalf("Serve returned %v after cancellation, want nil", err)
	}
	if _, err := os.Lstat(s.srv.SocketPath()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket still present after stop: %v", err)
	}
}

func TestGracefulStopLetsInFlightCallFinish(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	s := start(t, shortDir(t), preBootFunc(func(context.Context, *sdk.PreBootRequest) error {
		close(entered)
		<-release
		return nil
	}))
	result := preBootInFlight(t, s, entered)
	stopped := make(chan error, 1)
	go func() { stopped <- s.stop() }()
	close(release)
	if err := <-result; err != nil {
		t.Fatalf("in-flight call during graceful stop: %v", err)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

// preBootInFlight makes a PreBoot call to s and returns its result once
// the handler has signalled entered.
func preBootInFlight(t *testing.T, s *serving, entered <-chan struct{}) <-chan error {
	t.Helper()
	cl := client(t, s.srv.SocketPath())
	result := make(chan error, 1)
	go func() {
		_, err := cl.PreBoot(t.Context(), &hooksv1alpha1.PreBootRequest{Vmi: sdktest.VMIJSON("ns1", "vm1", nil, nil)})
		result <- err
	}()
	<-entered
	return result
}

// A call still running when the grace period ends is cancelled through
// its context; Serve then returns nil (the process exits 0) and removes
// the socket.
func TestGracePeriodEndCancelsTheContextOfCallsInFlight(t *testing.T) {
	const grace = 200 * time.Millisecond
	entered, handlerDone := make(chan struct{}), make(chan error, 1)
	s := start(t, shortDir(t), preBootFunc(func(ctx context.Context, _ *sdk.PreBootRequest) error {
		close(entered)
		<-ctx.Done()
		handlerDone <- ctx.Err()
		return ctx.Err()
	}), sdk.WithGracePeriod(grace))
	result := preBootInFlight(t, s, entered)
	stopping := time.Now()
	stopped := make(chan error, 1)
	go func() { stopped <- s.stop() }()
	bound := time.After(grace + 10*time.Second)
	select {
	case err := <-handlerDone:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("handler context ended with %v, want context.Canceled", err)
		}
	case <-bound:
		t.Fatalf("handler context not cancelled within %s of the stop", grace+10*time.Second)
	}
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("Serve returned %v, want nil: a stop after the grace period is still a clean stop", err)
		}
	case <-bound:
		t.Fatal("Serve did not return after the grace period")
	}
	if waited := time.Since(stopping); waited < grace {
		t.Errorf("Serve returned %s after the stop, before the grace period of %s", waited, grace)
	}
	if err := <-result; status.Code(err) != codes.Unavailable && status.Code(err) != codes.Canceled {
		t.Errorf("call cut off by the stop: %v, want Unavailable or Canceled", err)
	}
	if _, err := os.Lstat(s.srv.SocketPath()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket still present after stop: %v", err)
	}
}

func TestRecoveryInterceptorTurnsPanicIntoError(t *testing.T) {
	var calls int
	var mu sync.Mutex
	s := start(t, shortDir(t), guestDefFunc(func(_ context.Context, r *sdk.GuestDefinitionRequest) (*libvirtxml.Domain, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 1 {
			panic("boom")
		}
		return r.Domain, nil
	}))
	cl := client(t, s.srv.SocketPath())
	_, err := cl.GuestDefinition(t.Context(), gdRequest(nil))
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "boom") || !strings.Contains(err.Error(), "plugin demo") {
		t.Fatalf("panicking handler answered %v, want Internal naming the plugin and the panic", err)
	}
	if _, err := cl.GuestDefinition(t.Context(), gdRequest(nil)); err != nil {
		t.Fatalf("server after a panic: %v", err)
	}
}

func TestHandlerReceivesDecodedRequest(t *testing.T) {
	var got *sdk.GuestDefinitionRequest
	s := start(t, shortDir(t), guestDefFunc(func(_ context.Context, r *sdk.GuestDefinitionRequest) (*libvirtxml.Domain, error) {
		got = r
		r.Domain.Description = "seen"
		return r.Domain, nil
	}))
	resp, err := client(t, s.srv.SocketPath()).GuestDefinition(t.Context(), gdRequest(map[string]string{"a": "b"}))
	if err != nil {
		t.Fatal(err)
	}
	if got.VMI.Name != "vm1" || got.VMI.Namespace != "ns1" || got.VMI.Labels["a"] != "b" {
		t.Errorf("VMI = %s/%s labels %v", got.VMI.Namespace, got.VMI.Name, got.VMI.Labels)
	}
	if got.Domain.Name != "default_testvmi" || got.InvocationContext != sdk.InvocationMigrationTarget || got.Raw == nil {
		t.Errorf("domain %q, invocation context %q, raw %v", got.Domain.Name, got.InvocationContext, got.Raw)
	}
	if !bytes.Contains(resp.GetDomainXml(), []byte("<description>seen</description>")) {
		t.Errorf("response does not carry the handler's domain:\n%s", resp.GetDomainXml())
	}
}

func TestNilDomainKeepsRequestDomain(t *testing.T) {
	s := start(t, shortDir(t), guestDefFunc(func(context.Context, *sdk.GuestDefinitionRequest) (*libvirtxml.Domain, error) {
		return nil, nil
	}))
	resp, err := client(t, s.srv.SocketPath()).GuestDefinition(t.Context(), gdRequest(nil))
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.GetDomainXml()) != sdktest.MinimalDomainXML {
		t.Fatalf("nil domain did not return the request's domain unchanged:\n%s", resp.GetDomainXml())
	}
}

func TestUndecodableRequestIsInvalidArgument(t *testing.T) {
	s := start(t, shortDir(t), guestDefFunc(func(_ context.Context, r *sdk.GuestDefinitionRequest) (*libvirtxml.Domain, error) {
		return r.Domain, nil
	}))
	cl := client(t, s.srv.SocketPath())
	cases := map[string]*hooksv1alpha1.GuestDefinitionRequest{
		"no VMI":        {DomainXml: []byte(sdktest.MinimalDomainXML)},
		"VMI not JSON":  {DomainXml: []byte(sdktest.MinimalDomainXML), Vmi: []byte("{")},
		"domain no XML": {DomainXml: []byte("<domain"), Vmi: sdktest.VMIJSON("ns1", "vm1", nil, nil)},
	}
	for name, req := range cases {
		if _, err := cl.GuestDefinition(t.Context(), req); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: answered %v, want InvalidArgument", name, err)
		}
	}
}

func TestHandlerErrorNamesPluginHookPointAndVMI(t *testing.T) {
	cases := []struct {
		name     string
		err      error
		wantCode codes.Code
	}{
		{"plain error", errors.New("disk full"), codes.Unknown},
		{"status error keeps its code", status.Error(codes.FailedPrecondition, "disk full"), codes.FailedPrecondition},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := start(t, shortDir(t), preBootFunc(func(context.Context, *sdk.PreBootRequest) error { return tc.err }))
			_, err := client(t, s.srv.SocketPath()).PreBoot(t.Context(), &hooksv1alpha1.PreBootRequest{Vmi: sdktest.VMIJSON("ns1", "vm1", nil, nil)})
			if status.Code(err) != tc.wantCode {
				t.Fatalf("code = %v, want %v", status.Code(err), tc.wantCode)
			}
			for _, want := range []string{"plugin demo", "PreBoot", "ns1/vm1", "disk full"} {
				if !strings.Contains(status.Convert(err).Message(), want) {
					t.Errorf("message %q lacks %q", status.Convert(err).Message(), want)
				}
			}
		})
	}
}

func TestPreBootReceivesArtifacts(t *testing.T) {
	var got *sdk.PreBootRequest
	s := start(t, shortDir(t), preBootFunc(func(_ context.Context, r *sdk.PreBootRequest) error { got = r; return nil }))
	_, err := client(t, s.srv.SocketPath()).PreBoot(t.Context(), &hooksv1alpha1.PreBootRequest{
		Vmi:       sdktest.VMIJSON("ns1", "vm1", nil, nil),
		Artifacts: &hooksv1alpha1.BootArtifacts{CloudInitIso: "/e/cloud-init.iso", EphemeralDiskDir: "/e"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.CloudInitISO != "/e/cloud-init.iso" || got.EphemeralDiskDir != "/e" {
		t.Fatalf("artifacts = %q %q", got.CloudInitISO, got.EphemeralDiskDir)
	}
}

func TestPreMigrationSourceReturnsChanges(t *testing.T) {
	var gotFlags sdk.MigrationFlags
	var gotConns int32
	s := start(t, shortDir(t), preMigrationFunc(func(_ context.Context, r *sdk.PreMigrationSourceRequest) (*sdk.MigrationChanges, error) {
		gotFlags = r.Flags
		gotConns, _ = r.Params.ParallelConnections()
		return sdk.NewMigrationChanges().SetFlags(sdk.MigrateParallel).ClearFlags(sdk.MigratePostcopy).SetParallelConnections(4), nil
	}))
	two := int32(2)
	resp, err := client(t, s.srv.SocketPath()).PreMigrationSource(t.Context(), &hooksv1alpha1.PreMigrationSourceRequest{
		Vmi:    sdktest.VMIJSON("ns1", "vm1", nil, nil),
		Flags:  uint64(sdk.MigrateLive | sdk.MigratePostcopy),
		Params: &hooksv1alpha1.MigrationParams{ParallelConnections: &hooksv1alpha1.IntParam{Value: &two}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if gotFlags != sdk.MigrateLive|sdk.MigratePostcopy || gotConns != 2 {
		t.Errorf("handler saw flags %v, parallel.connections %d", gotFlags, gotConns)
	}
	if resp.GetSetFlags() != uint64(sdk.MigrateParallel) || resp.GetClearFlags() != uint64(sdk.MigratePostcopy) || resp.GetParams().GetParallelConnections().GetValue() != 4 {
		t.Fatalf("response = %v", resp)
	}
}

func TestPreMigrationSourceNilChangesIsEmptyResponse(t *testing.T) {
	s := start(t, shortDir(t), preMigrationFunc(func(context.Context, *sdk.PreMigrationSourceRequest) (*sdk.MigrationChanges, error) {
		return nil, nil
	}))
	resp, err := client(t, s.srv.SocketPath()).PreMigrationSource(t.Context(), &hooksv1alpha1.PreMigrationSourceRequest{Vmi: sdktest.VMIJSON("ns1", "vm1", nil, nil), Flags: 1})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetSetFlags() != 0 || resp.GetClearFlags() != 0 || resp.GetParams() != nil {
		t.Fatalf("response = %v, want empty", resp)
	}
}

func TestMetricsRegisteredWithRegisterer(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := start(t, shortDir(t), guestDefFunc(func(_ context.Context, r *sdk.GuestDefinitionRequest) (*libvirtxml.Domain, error) {
		return r.Domain, nil
	}), sdk.WithRegisterer(reg))
	if _, err := client(t, s.srv.SocketPath()).GuestDefinition(t.Context(), gdRequest(nil)); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var handled float64
	for _, f := range families {
		if f.GetName() != "grpc_server_handled_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["grpc_method"] == "GuestDefinition" && labels["grpc_code"] == "OK" {
				handled += m.GetCounter().GetValue()
			}
		}
	}
	if handled != 1 {
		t.Fatalf("grpc_server_handled_total{grpc_method=GuestDefinition,grpc_code=OK} = %v, want 1", handled)
	}
}

func TestLoggingInterceptorLogsCalls(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{})
	s := start(t, shortDir(t), preBootFunc(func(context.Context, *sdk.PreBootRequest) error { return nil }), sdk.WithLogger(log))
	if _, err := client(t, s.srv.SocketPath()).PreBoot(t.Context(), &hooksv1alpha1.PreBootRequest{Vmi: sdktest.VMIJSON("ns1", "vm1", nil, nil)}); err != nil {
		t.Fatal(err)
	}
	_ = s.stop()
	mu.Lock()
	defer mu.Unlock()
	for _, l := range lines {
		if strings.Contains(l, `"finished call"`) && strings.Contains(l, `"grpc.method"="PreBoot"`) {
			return
		}
	}
	t.Fatalf("no finished-call log line for PreBoot in:\n%s", strings.Join(lines, "\n"))
}
