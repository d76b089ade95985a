// SPDX-License-Identifier: Apache-2.0

package sdk_test

import (
	"context"
	"fmt"
	"os"

	"libvirt.org/go/libvirtxml"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
	"github.com/kubevirt-plugins/framework/protos/sdk"
	"github.com/kubevirt-plugins/framework/protos/sdk/sdktest"
)

// hostCPU is a GuestDefinition handler: it implements only
// sdk.GuestDefinitionHandler, so PreBoot and PreMigrationSource answer
// Unimplemented.
type hostCPU struct{}

func (hostCPU) GuestDefinition(_ context.Context, req *sdk.GuestDefinitionRequest) (*libvirtxml.Domain, error) {
	if req.VMI.Labels["cpu.example.com/mode"] == "host" {
		req.Domain.CPU = &libvirtxml.DomainCPU{Mode: "host-passthrough"}
	}
	return req.Domain, nil
}

func ExampleServeLauncherHooks() {
	// A sidecar's main is just:
	//
	//	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	//	defer stop()
	//	err := sdk.ServeLauncherHooks(ctx, "host-cpu", hostCPU{}, sdk.WithLogger(log))
	//
	// Here the socket root is a temporary directory and a client calls the
	// hook once before the server is stopped.
	root, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(root)
	srv, err := sdk.NewLauncherServer("host-cpu", hostCPU{}, sdk.WithSocketRoot(root))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()

	conn, _ := sdktest.Dial(srv.SocketPath())
	defer conn.Close()
	resp, err := hooksv1alpha1.NewLauncherHookServiceClient(conn).GuestDefinition(context.Background(), &hooksv1alpha1.GuestDefinitionRequest{
		DomainXml: []byte(sdktest.MinimalDomainXML),
		Vmi:       sdktest.VMIJSON("default", "vm1", map[string]string{"cpu.example.com/mode": "host"}, nil),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	dom := &libvirtxml.Domain{}
	_ = dom.Unmarshal(string(resp.GetDomainXml()))
	fmt.Println("cpu mode:", dom.CPU.Mode)
	cancel()
	fmt.Println("stopped:", <-done)
	// Output:
	// cpu mode: host-passthrough
	// stopped: <nil>
}

func ExampleMigrationChanges() {
	changes := sdk.NewMigrationChanges().
		SetFlags(sdk.MigrateParallel | sdk.MigrateCompressed).
		ClearFlags(sdk.MigratePostcopy).
		SetParallelConnections(4).
		SetCompression("xbzrle").
		Remove(sdk.ParamBandwidth)
	flags, params, err := changes.Apply(sdk.MigrateLive|sdk.MigratePostcopy, sdk.MigrationParams{})
	fmt.Println(flags, params, err)
	// Output: LIVE|COMPRESSED|PARALLEL map[compression:[xbzrle] parallel.connections:4] <nil>
}
