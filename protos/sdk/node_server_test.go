// SPDX-License-Identifier: Apache-2.0

package sdk_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
	"github.com/kubevirt-plugins/framework/protos/sdk"
	"github.com/kubevirt-plugins/framework/protos/sdk/sdktest"
)

type nodeFunc func(context.Context, *sdk.NodeHookRequest) error

func (f nodeFunc) ExecuteNodeHook(ctx context.Context, r *sdk.NodeHookRequest) error {
	return f(ctx, r)
}

func TestServeNodeHooksCreatesSocketDirAndDecodesRequest(t *testing.T) {
	path := filepath.Join(shortDir(t), "plugins", "rec.sock")
	var got *sdk.NodeHookRequest
	ctx, cancel := context.WithCancel(t.Context())
	srv, err := sdk.NewNodeServer(path, nodeFunc(func(_ context.Context, r *sdk.NodeHookRequest) error { got = r; return nil }))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || fi.Mode().Perm() != 0o750 {
		t.Fatalf("socket directory: %v, %v; want mode 0750", fi, err)
	}
	conn, err := sdktest.Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cl := hooksv1alpha1.NewNodeHookServiceClient(conn)
	_, err = cl.ExecuteNodeHook(t.Context(), &hooksv1alpha1.ExecuteNodeHookRequest{
		HookPoint: "PostVMStart", Vmi: sdktest.VMIJSON("ns1", "vm1", nil, nil), NodeContext: &hooksv1alpha1.NodeContext{NodeName: "node01"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.HookPoint != sdk.NodeHookPostVMStart || got.NodeName != "node01" || got.VMI.Name != "vm1" {
		t.Errorf("request = %+v", got)
	}
	_, err = cl.ExecuteNodeHook(t.Context(), &hooksv1alpha1.ExecuteNodeHookRequest{HookPoint: "PreBoot", Vmi: sdktest.VMIJSON("ns1", "vm1", nil, nil)})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("unknown hook point answered %v, want InvalidArgument", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket left after stop: %v", err)
	}
}

func TestNodeServerPassesNodeContract(t *testing.T) {
	socket := sdktest.StartNode(t, nodeFunc(func(context.Context, *sdk.NodeHookRequest) error { return nil }))
	sdktest.RunNodeContract(t, socket, sdktest.NodeContract{})
}
