// SPDX-License-Identifier: Apache-2.0

package sockets

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

type preBootOK struct {
	hooksv1alpha1.UnimplementedLauncherHookServiceServer
}

func (preBootOK) PreBoot(context.Context, *hooksv1alpha1.PreBootRequest) (*hooksv1alpha1.PreBootResponse, error) {
	return &hooksv1alpha1.PreBootResponse{}, nil
}

// TestDialRechecksPathWhenConnecting swaps the plugin directory for a
// symlink after the client was created and before it connects: the check
// in the dialer refuses it.
func TestDialRechecksPathWhenConnecting(t *testing.T) {
	root := shortDir(t)
	dir := filepath.Join(root, "p")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(dir, "hook.sock"))
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hooksv1alpha1.RegisterLauncherHookServiceServer(srv, preBootOK{})
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)

	r := NewRoot(root)
	const socket = "/var/run/kubevirt-plugin/p/hook.sock"
	if _, err := r.Check("p", socket); err != nil {
		t.Fatalf("the socket is fine before the swap: %v", err)
	}
	conn, err := r.Dial("p", socket, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	if err := os.Rename(dir, filepath.Join(root, "real")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "real"), dir); err != nil {
		t.Fatal(err)
	}
	_, err = hooksv1alpha1.NewLauncherHookServiceClient(conn).PreBoot(t.Context(), &hooksv1alpha1.PreBootRequest{})
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "is a symlink") {
		t.Fatalf("want the connection refused because of the symlink, got %v", err)
	}

	// The same server through a path without symlinks answers.
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(root, "real"), dir); err != nil {
		t.Fatal(err)
	}
	conn2, err := r.Dial("p", socket, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	if _, err := hooksv1alpha1.NewLauncherHookServiceClient(conn2).PreBoot(t.Context(), &hooksv1alpha1.PreBootRequest{}); err != nil {
		t.Fatalf("call through a clean path failed: %v", err)
	}
}
