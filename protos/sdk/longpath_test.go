// SPDX-License-Identifier: Apache-2.0

package sdk_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	v1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/api/socketpath"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
	"github.com/kubevirt-plugins/framework/protos/sdk"
	"github.com/kubevirt-plugins/framework/protos/sdk/sdktest"
)

// rootForPathLength returns a socket root under which plugin "demo"'s
// hook.sock is exactly n bytes long.
func rootForPathLength(t *testing.T, n int) string {
	t.Helper()
	base := shortDir(t)
	pad := n - len(base) - len("/x/demo/hook.sock") + 1
	if pad < 1 {
		t.Fatalf("temporary directory %s too long for a %d-byte path", base, n)
	}
	root := filepath.Join(base, strings.Repeat("x", pad))
	if got := len(root + "/demo/hook.sock"); got != n {
		t.Fatalf("path of %d bytes, want %d", got, n)
	}
	return root
}

// dialChecked connects as virt-launcher does, through the checked dial of
// api/socketpath below root.
func dialChecked(t *testing.T, root string, components ...string) *grpc.ClientConn {
	t.Helper()
	r := socketpath.NewRoot(root)
	conn, err := grpc.NewClient("passthrough:///"+strings.Join(components, "/"),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return r.Dial(ctx, components) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// TestServesEverySocketPathAdmissionAccepts: a sidecar built with the SDK
// serves on a socket path of the full 108 bytes admission accepts (one more
// than Go's sockaddr holds), virt-launcher's checked dial reaches it, a
// second server on it is refused as in use, and stopping removes it; a
// stale socket of that length is replaced.
func TestServesEverySocketPathAdmissionAccepts(t *testing.T) {
	root := rootForPathLength(t, v1alpha1.MaxSocketPathLength)
	path := root + "/demo/hook.sock"
	if err := socketpath.CheckShape(path); err != nil {
		t.Fatalf("admission refuses the path the test serves on: %v", err)
	}
	h := preBootFunc(func(context.Context, *sdk.PreBootRequest) error { return nil })
	s := start(t, root, h)
	if s.srv.SocketPath() != path {
		t.Fatalf("serving on %s, want %s", s.srv.SocketPath(), path)
	}
	cc := hooksv1alpha1.NewLauncherHookServiceClient(dialChecked(t, root, "demo", "hook.sock"))
	if _, err := cc.PreBoot(t.Context(), &hooksv1alpha1.PreBootRequest{Vmi: sdktest.VMIJSON("ns1", "vm1", nil, nil)}); err != nil {
		t.Fatalf("PreBoot on a %d-byte socket path: %v", len(path), err)
	}
	if _, err := client(t, path).PreBoot(t.Context(), &hooksv1alpha1.PreBootRequest{Vmi: sdktest.VMIJSON("ns1", "vm1", nil, nil)}); err != nil {
		t.Fatalf("PreBoot through sdktest.Dial on a %d-byte socket path: %v", len(path), err)
	}
	if _, err := sdk.NewLauncherServer("demo", h, sdk.WithSocketRoot(root)); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second server on the live %d-byte socket: err = %v, want in use", len(path), err)
	}
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket still present after stop: %v", err)
	}

	// A crashed server's socket of that length: the file stays, nobody answers.
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: "/proc/self/fd/" + strconv.FormatUint(uint64(dir.Fd()), 10) + "/hook.sock", Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	_ = l.Close()
	_ = dir.Close()
	start(t, root, h)
	cc = hooksv1alpha1.NewLauncherHookServiceClient(dialChecked(t, root, "demo", "hook.sock"))
	if _, err := cc.PreBoot(t.Context(), &hooksv1alpha1.PreBootRequest{Vmi: sdktest.VMIJSON("ns1", "vm1", nil, nil)}); err != nil {
		t.Fatalf("PreBoot over the replaced %d-byte socket: %v", len(path), err)
	}
}

// TestNodeServerServesA108BytePath: the same for a node hook server, which
// virt-handler reaches through the same checked dial.
func TestNodeServerServesA108BytePath(t *testing.T) {
	root := rootForPathLength(t, v1alpha1.MaxSocketPathLength)
	path := root + "/demo/hook.sock"
	srv, err := sdk.NewNodeServer(path, nodeFunc(func(context.Context, *sdk.NodeHookRequest) error { return nil }))
	if err != nil {
		t.Fatalf("node hook server on a %d-byte path: %v", len(path), err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	cc := hooksv1alpha1.NewNodeHookServiceClient(dialChecked(t, root, "demo", "hook.sock"))
	if _, err := cc.ExecuteNodeHook(t.Context(), &hooksv1alpha1.ExecuteNodeHookRequest{
		HookPoint: "PreVMStart", Vmi: sdktest.VMIJSON("ns1", "vm1", nil, nil)}); err != nil {
		t.Fatalf("ExecuteNodeHook on a %d-byte socket path: %v", len(path), err)
	}
}
