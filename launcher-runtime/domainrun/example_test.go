// SPDX-License-Identifier: Apache-2.0

//go:build cgo

package domainrun_test

import (
	"context"
	"fmt"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/kubevirt-plugins/framework/launcher-runtime/domainrun"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// Boot: the GuestDefinition chain shapes the domain, then libvirt defines
// and starts it.
func ExampleDefineAndStart() {
	ctx := context.Background()
	var (
		p      *pipeline.Pipeline // pipeline.New(plugins, pipeline.Options{...})
		vmi    *kubevirtv1.VirtualMachineInstance
		domain *libvirtxml.Domain // as KubeVirt generated it
	)
	conn, err := libvirt.NewConnect("qemu:///system")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	domain, err = p.GuestDefinition(ctx, vmi, domain, pipeline.Boot)
	if err != nil {
		fmt.Println(err)
		return
	}
	dom, err := domainrun.DefineAndStart(ctx, conn, domain)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dom.Free()
}

// Migration source: the PreMigrationSource chain edits the flags and
// parameters, then libvirt migrates peer to peer. Cancelling ctx aborts the
// migration job.
func ExampleMigrate() {
	ctx := context.Background()
	var (
		p   *pipeline.Pipeline
		vmi *kubevirtv1.VirtualMachineInstance
		dom *libvirt.Domain
	)
	uri := "tcp://target-node"
	flags := uint64(libvirt.MIGRATE_LIVE | libvirt.MIGRATE_PEER2PEER)
	params := &hooksv1alpha1.MigrationParams{MigrateUri: &hooksv1alpha1.StringParam{Value: &uri}}

	result, err := p.PreMigrationSource(ctx, vmi, flags, params)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := domainrun.Migrate(ctx, dom, "qemu+tcp://target-node/system", result.Flags, result.Params); err != nil {
		fmt.Println(err)
	}
}
