// SPDX-License-Identifier: Apache-2.0

package main

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

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"libvirt.org/go/libvirtxml"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
	"github.com/kubevirt-plugins/framework/protos/sdk"
)

// conformingSidecar keeps every rule of GuestDefinition and PreBoot.
type conformingSidecar struct{}

func (conformingSidecar) GuestDefinition(_ context.Context, r *sdk.GuestDefinitionRequest) (*libvirtxml.Domain, error) {
	r.Domain.Title = "conforming"
	return r.Domain, nil
}

func (conformingSidecar) PreBoot(ctx context.Context, r *sdk.PreBootRequest) error {
	if r.CloudInitISO == "" {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return sdk.AtomicWriteFile(r.CloudInitISO, []byte("configured\n"), 0o644)
}

// sidecarSocket serves handler as plugin name and returns its Plugin file
// and socket.
func sidecarSocket(t *testing.T, name string, handler any, points ...string) (string, string) {
	t.Helper()
	root := socketRoot(t)
	serveSDK(t, root, name, handler)
	return sidecarPlugin(t, name, points...), filepath.Join(root, name, "hook.sock")
}

func isoCopy(t *testing.T) string {
	t.Helper()
	return writeFile(t, "noCloud.iso", "original ISO\n")
}

func TestConformancePassesConformingSidecar(t *testing.T) {
	plugin, socket := sidecarSocket(t, "good", conformingSidecar{}, "GuestDefinition", "PreBoot")
	code, stdout, stderr := kvpctl(t, "conformance", "--plugin", plugin, "--socket", socket, "--iso", isoCopy(t), "--vmi", testVMI, "--domain", testDomain)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{"PASS GuestDefinition/BothInvocationContexts", "PASS GuestDefinition/Repeatable", "PASS PreBoot/ContextHonoured", "PASS PreBoot/AtomicWrites", "0 failed, 0 warnings"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

// refusesMigrationTarget fails every GuestDefinition on a migration target.
type refusesMigrationTarget struct{ conformingSidecar }

func (r refusesMigrationTarget) GuestDefinition(ctx context.Context, req *sdk.GuestDefinitionRequest) (*libvirtxml.Domain, error) {
	if req.InvocationContext == sdk.InvocationMigrationTarget {
		return nil, errors.New("not a boot")
	}
	return r.conformingSidecar.GuestDefinition(ctx, req)
}

// changesOnce changes the domain on its first call only.
type changesOnce struct {
	mu   sync.Mutex
	done bool
}

func (c *changesOnce) GuestDefinition(_ context.Context, req *sdk.GuestDefinitionRequest) (*libvirtxml.Domain, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.done {
		req.Domain.Title, c.done = "once", true
	}
	return req.Domain, nil
}

// rewritesISOLater ignores its context and rewrites the ISO 1.5 s into the
// call.
type rewritesISOLater struct{}

func (rewritesISOLater) PreBoot(_ context.Context, r *sdk.PreBootRequest) error {
	time.Sleep(1500 * time.Millisecond)
	if r.CloudInitISO == "" {
		return nil
	}
	return os.WriteFile(r.CloudInitISO, []byte("rewritten\n"), 0o644)
}

// setsAndClears is a PreMigrationSource server written without the SDK
// that sets and clears the same bit.
type setsAndClears struct {
	hooksv1alpha1.UnimplementedLauncherHookServiceServer
}

func (setsAndClears) PreMigrationSource(context.Context, *hooksv1alpha1.PreMigrationSourceRequest) (*hooksv1alpha1.PreMigrationSourceResponse, error) {
	return &hooksv1alpha1.PreMigrationSourceResponse{SetFlags: uint64(sdk.MigratePostcopy), ClearFlags: uint64(sdk.MigratePostcopy)}, nil
}

func serveGRPC(t *testing.T, register func(*grpc.Server)) string {
	t.Helper()
	path := filepath.Join(socketRoot(t), "hook.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	register(g)
	go func() { _ = g.Serve(l) }()
	t.Cleanup(g.Stop)
	return path
}

func TestConformanceFailsSidecarsBreakingTheContract(t *testing.T) {
	rawSocket := serveGRPC(t, func(g *grpc.Server) { hooksv1alpha1.RegisterLauncherHookServiceServer(g, setsAndClears{}) })
	for _, tc := range []struct {
		name, plugin, socket, want string
	}{
		func() struct{ name, plugin, socket, want string } {
			p, s := sidecarSocket(t, "migration-target", refusesMigrationTarget{}, "GuestDefinition")
			return struct{ name, plugin, socket, want string }{"RefusesMigrationTarget", p, s, "FAIL GuestDefinition/BothInvocationContexts"}
		}(),
		func() struct{ name, plugin, socket, want string } {
			p, s := sidecarSocket(t, "once", &changesOnce{}, "GuestDefinition")
			return struct{ name, plugin, socket, want string }{"ChangesOnlyOnFirstCall", p, s, "FAIL GuestDefinition/Repeatable"}
		}(),
		func() struct{ name, plugin, socket, want string } {
			p, s := sidecarSocket(t, "late", rewritesISOLater{}, "PreBoot")
			return struct{ name, plugin, socket, want string }{"RewritesISOAfterDeadline", p, s, "FAIL PreBoot/ContextHonoured"}
		}(),
		{"SetsAndClearsABit", sidecarPlugin(t, "raw", "PreMigrationSource"), rawSocket, "FAIL PreMigrationSource/ResponseValid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := kvpctl(t, "conformance", "--plugin", tc.plugin, "--socket", tc.socket, "--iso", isoCopy(t))
			t.Log(stdout)
			if code != exitError || !strings.Contains(stdout, tc.want) || !strings.Contains(stderr, "checks failed") {
				t.Errorf("exit %d, want 1 with %q\nstdout:\n%s\nstderr:\n%s", code, tc.want, stdout, stderr)
			}
		})
	}
}

// Without --iso PreBoot is handed the stand-in NoCloud ISO, so a sidecar
// that does nothing without an ISO is still seen breaking the rules.
func TestConformanceGivesPreBootAStandInISOWithoutISOFlag(t *testing.T) {
	plugin, socket := sidecarSocket(t, "late", rewritesISOLater{}, "PreBoot")
	code, stdout, stderr := kvpctl(t, "conformance", "--plugin", plugin, "--socket", socket)
	t.Log(stdout)
	if code != exitError || !strings.Contains(stdout, "FAIL PreBoot/ContextHonoured") || !strings.Contains(stdout, "noCloud.iso rewritten") {
		t.Errorf("late writer without --iso: exit %d, want 1 with FAIL PreBoot/ContextHonoured\n%s%s", code, stdout, stderr)
	}

	// With --no-iso nothing can be seen: the file checks warn, none passes.
	code, stdout, stderr = kvpctl(t, "conformance", "--plugin", plugin, "--socket", socket, "--no-iso", "--settle", "500ms")
	t.Log(stdout)
	for _, check := range []string{"NoChangeAfterReturn", "ContextHonoured", "AtomicWrites", "Repeatable"} {
		if !strings.Contains(stdout, "WARN PreBoot/"+check+": PreBoot was given no cloud-init ISO") {
			t.Errorf("--no-iso: output lacks a warning for PreBoot/%s", check)
		}
	}
	if code != exitOK || strings.Contains(stdout, "PASS PreBoot/") {
		t.Errorf("--no-iso: exit %d, want 0 with no PreBoot file check passed\n%s%s", code, stdout, stderr)
	}

	plugin, socket = sidecarSocket(t, "good", conformingSidecar{}, "PreBoot")
	code, stdout, stderr = kvpctl(t, "conformance", "--plugin", plugin, "--socket", socket)
	if code != exitOK || !strings.Contains(stdout, "PASS PreBoot/AtomicWrites: replaced by rename: noCloud.iso rewritten") {
		t.Errorf("conforming sidecar without --iso: exit %d\n%s%s", code, stdout, stderr)
	}

	code, _, stderr = kvpctl(t, "conformance", "--plugin", plugin, "--socket", socket, "--no-iso", "--iso", isoCopy(t))
	if code != exitUsage || !strings.Contains(stderr, "exclude each other") {
		t.Errorf("--iso with --no-iso: exit %d, stderr %q", code, stderr)
	}
}

func TestConformanceWarnsOnRPCNotPermitted(t *testing.T) {
	plugin, socket := sidecarSocket(t, "extra", conformingSidecar{}, "GuestDefinition")
	code, stdout, stderr := kvpctl(t, "conformance", "--plugin", plugin, "--socket", socket)
	if code != exitOK || !strings.Contains(stdout, "WARN RPCs/OnlyPermitted") || !strings.Contains(stdout, "0 failed, 1 warnings") {
		t.Errorf("exit %d, want 0 with a warning\n%s%s", code, stdout, stderr)
	}
}

type nodeServer struct {
	mu    sync.Mutex
	calls int
	flaky bool
}

func (n *nodeServer) ExecuteNodeHook(ctx context.Context, _ *sdk.NodeHookRequest) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls++
	if n.flaky && n.calls > 1 {
		return errors.New("already ran")
	}
	return ctx.Err()
}

func nodeServerSocket(t *testing.T, h sdk.NodeHookHandler) string {
	t.Helper()
	path := filepath.Join(socketRoot(t), "node.sock")
	srv, err := sdk.NewNodeServer(path, h)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return path
}

func TestConformanceChecksNodeHookServers(t *testing.T) {
	plugin := writeFile(t, "node.yaml", `apiVersion: plugin.kubevirt.io/v1alpha1
kind: Plugin
metadata:
  name: node-demo
spec:
  nodeHooks:
  - socket: /var/run/kubevirt/plugins/node.sock
    permittedHooks: [PreVMStart, OnVMStop]
`)
	code, stdout, stderr := kvpctl(t, "conformance", "--plugin", plugin, "--socket", nodeServerSocket(t, &nodeServer{}))
	if code != exitOK || !strings.Contains(stdout, "PASS Node/OnVMStop/Repeatable") || strings.Contains(stdout, "PostVMStop") {
		t.Errorf("well-behaved node server: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = kvpctl(t, "conformance", "--plugin", plugin, "--socket", nodeServerSocket(t, &nodeServer{flaky: true}))
	if code != exitError || !strings.Contains(stdout, "FAIL Node/PreVMStart/Repeatable") {
		t.Errorf("node server refusing a repeated event: exit %d\n%s%s", code, stdout, stderr)
	}
}

func TestConformanceBadSocketIsOneLineAndExit1(t *testing.T) {
	plugin := sidecarPlugin(t, "demo", "GuestDefinition")
	regular := writeFile(t, "hook.sock", "")
	// A Unix socket whose server speaks something else than gRPC.
	garbage := filepath.Join(socketRoot(t), "garbage.sock")
	l, err := net.Listen("unix", garbage)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("HTTP/1.0 400 Bad Request\r\n\r\n"))
			_ = c.Close()
		}
	}()
	// A gRPC server that serves only the health service.
	other := serveGRPC(t, func(g *grpc.Server) { healthpb.RegisterHealthServer(g, health.NewServer()) })
	nodePlugin := writeFile(t, "node.yaml", `apiVersion: plugin.kubevirt.io/v1alpha1
kind: Plugin
metadata:
  name: node-demo
spec:
  nodeHooks:
  - socket: /var/run/kubevirt/plugins/node.sock
    permittedHooks: [PreVMStart]
`)
	for _, tc := range []struct{ name, plugin, socket, want string }{
		{"Missing", plugin, filepath.Join(t.TempDir(), "none.sock"), "no such file or directory"},
		{"NotASocket", plugin, regular, "is not a Unix socket"},
		{"NotGRPC", plugin, garbage, "does not answer gRPC"},
		{"OtherService", plugin, other, "does not serve kubevirt.hooks.plugins.v1alpha1.LauncherHookService"},
		{"NodeHooksNotGRPC", nodePlugin, garbage, "does not answer gRPC"},
		{"NodeHooksOtherService", nodePlugin, other, "does not serve kubevirt.hooks.plugins.v1alpha1.NodeHookService"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := kvpctl(t, "conformance", "--plugin", tc.plugin, "--socket", tc.socket)
			if code != exitError || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 || stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and one line mentioning %q", code, stdout, stderr, tc.want)
			}
		})
	}
}

func TestConformanceChangesNoFileOutsideItsTemporaryDirectory(t *testing.T) {
	// A sidecar that rewrites whatever ISO it is given, in place.
	root := socketRoot(t)
	stop := serveSDK(t, root, "late", rewritesISOLater{})
	plugin, socket := sidecarPlugin(t, "late", "PreBoot"), filepath.Join(root, "late", "hook.sock")
	iso := isoCopy(t)
	before, err := os.ReadFile(iso)
	if err != nil {
		t.Fatal(err)
	}
	infoBefore, _ := os.Stat(iso)
	// The command's temporary directories go here, watched by nobody else.
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	code, stdout, _ := kvpctl(t, "conformance", "--plugin", plugin, "--socket", socket, "--iso", iso, "--settle", "2s")
	if code != exitError {
		t.Fatalf("exit %d, want 1:\n%s", code, stdout)
	}
	after, err := os.ReadFile(iso)
	if err != nil {
		t.Fatal(err)
	}
	infoAfter, _ := os.Stat(iso)
	if !bytes.Equal(before, after) || !infoAfter.ModTime().Equal(infoBefore.ModTime()) {
		t.Errorf("the ISO given with --iso changed: %q -> %q", before, after)
	}
	// The sidecar's late writes land before its graceful stop returns;
	// then look for leftovers.
	stop()
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("%s left behind in the temporary directory", e.Name())
	}
}

func TestConformanceNeedsTheSocketToNameOneOfSeveralServers(t *testing.T) {
	plugin := writeFile(t, "two.yaml", `apiVersion: plugin.kubevirt.io/v1alpha1
kind: Plugin
metadata:
  name: two
spec:
  nodeHooks:
  - socket: /var/run/kubevirt/plugins/a.sock
    permittedHooks: [PreVMStart]
  - socket: /var/run/kubevirt/plugins/b.sock
    permittedHooks: [OnVMStop]
`)
	socket := nodeServerSocket(t, &nodeServer{})
	code, stdout, stderr := kvpctl(t, "conformance", "--plugin", plugin, "--socket", socket)
	if code != exitError || !strings.Contains(stderr, "none of its 2 node hook servers has a socket ending like") {
		t.Errorf("exit %d, want 1 naming the ambiguity\n%s%s", code, stdout, stderr)
	}
}
