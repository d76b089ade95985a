// SPDX-License-Identifier: Apache-2.0

package launcher_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/kubevirt-plugins/framework/launcher-runtime/domainrun"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
	"github.com/kubevirt-plugins/framework/tests/framework/libvirtd"
)

// migrationPair is two libvirtd containers on one Docker network, with a
// domain running on the source.
type migrationPair struct {
	source, target         *libvirtd.Node
	sourceConn, targetConn *libvirt.Connect
	dom                    *libvirt.Domain
	name                   string
}

func startMigrationPair(t *testing.T, ctx context.Context, domain *libvirtxml.Domain) *migrationPair {
	t.Helper()
	nw := libvirtd.NewNetworkT(t)
	p := &migrationPair{
		source: libvirtd.StartT(t, libvirtd.Options{Network: nw, Alias: "source"}),
		target: libvirtd.StartT(t, libvirtd.Options{Network: nw, Alias: "target"}),
		name:   domain.Name,
	}
	p.sourceConn = p.source.ConnectT(t)
	p.targetConn = p.target.ConnectT(t)
	dom, err := domainrun.DefineAndStart(ctx, p.sourceConn, domain)
	if err != nil {
		t.Fatalf("%v\n%s", err, p.source.Logs(ctx))
	}
	t.Cleanup(func() { _ = dom.Free() })
	p.dom = dom
	return p
}

// state returns the domain's state on conn, or -1 when conn has no such
// domain.
func domainState(t *testing.T, conn *libvirt.Connect, name string) (libvirt.DomainState, int) {
	t.Helper()
	dom, err := conn.LookupDomainByName(name)
	var lverr libvirt.Error
	if errors.As(err, &lverr) && lverr.Code == libvirt.ERR_NO_DOMAIN {
		return -1, 0
	}
	if err != nil {
		t.Fatal(err)
	}
	defer dom.Free()
	state, reason, err := dom.GetState()
	if err != nil {
		t.Fatal(err)
	}
	return state, reason
}

func (p *migrationPair) requireRunningOnTargetOnly(t *testing.T) {
	t.Helper()
	if state, _ := domainState(t, p.targetConn, p.name); state != libvirt.DOMAIN_RUNNING {
		t.Fatalf("domain %s on the target: state %d, want running", p.name, state)
	}
	if state, reason := domainState(t, p.sourceConn, p.name); state != libvirt.DOMAIN_SHUTOFF || libvirt.DomainShutoffReason(reason) != libvirt.DOMAIN_SHUTOFF_MIGRATED {
		t.Fatalf("domain %s on the source: state %d reason %d, want shut off after migration", p.name, state, reason)
	}
}

func str(v string) *hooksv1alpha1.StringParam { return &hooksv1alpha1.StringParam{Value: &v} }
func u64(v uint64) *hooksv1alpha1.Uint64Param { return &hooksv1alpha1.Uint64Param{Value: &v} }
func i32(v int32) *hooksv1alpha1.IntParam     { return &hooksv1alpha1.IntParam{Value: &v} }

const p2pLive = uint64(libvirt.MIGRATE_LIVE | libvirt.MIGRATE_PEER2PEER)

// The parameters reach libvirt: it refuses parallel.connections unless the
// PARALLEL flag is set, a check only libvirt makes.
func TestMigrateHandsParametersToLibvirt(t *testing.T) {
	ctx := testContext(t)
	p := startMigrationPair(t, ctx, libvirtd.DisklessDomain("params-reach-libvirt"))
	params := &hooksv1alpha1.MigrationParams{MigrateUri: str("tcp://" + p.target.Hostname), ParallelConnections: i32(2)}

	err := domainrun.Migrate(ctx, p.dom, p.target.PeerURI(), p2pLive, params)
	if err == nil || !strings.Contains(err.Error(), "parallel") {
		t.Fatalf("migration with parallel.connections but without VIR_MIGRATE_PARALLEL: error %v, want libvirt refusing the parameter", err)
	}
	t.Logf("libvirt refused: %v", err)
	if state, _ := domainState(t, p.sourceConn, p.name); state != libvirt.DOMAIN_RUNNING {
		t.Fatalf("domain left the source after a refused migration: state %d", state)
	}

	flags := p2pLive | uint64(libvirt.MIGRATE_PARALLEL)
	if err := domainrun.Migrate(ctx, p.dom, p.target.PeerURI(), flags, params); err != nil {
		t.Fatalf("%v\nsource log:\n%s", err, p.source.Logs(ctx))
	}
	p.requireRunningOnTargetOnly(t)
}

func TestMigrateRefusesParametersTheConnectedLibvirtLacks(t *testing.T) {
	ctx := testContext(t)
	p := startMigrationPair(t, ctx, libvirtd.DisklessDomain("too-new-param"))
	params := &hooksv1alpha1.MigrationParams{MigrateUri: str("tcp://" + p.target.Hostname), CompressionZstdLevel: i32(3)}

	err := domainrun.Migrate(ctx, p.dom, p.target.PeerURI(), p2pLive, params)
	if !errors.Is(err, domainrun.ErrUnsupportedParam) || !strings.Contains(err.Error(), "compression.zstd.level") {
		t.Fatalf("error = %v, want ErrUnsupportedParam naming compression.zstd.level", err)
	}
	if state, _ := domainState(t, p.targetConn, p.name); state != -1 {
		t.Fatalf("domain reached the target: state %d", state)
	}
}

// fillSize is how much random data the generic loader device writes into
// guest RAM: without it the RAM of a diskless guest is zero pages, which
// QEMU migrates in about a second whatever the bandwidth limit.
const fillSize = "40M"

func TestMigrateAbortsTheJobWhenTheContextIsCancelled(t *testing.T) {
	ctx := testContext(t)
	const fill = "/var/lib/libvirt/fill.bin"
	domain := libvirtd.DisklessDomain("abort-on-cancel")
	domain.Memory = &libvirtxml.DomainMemory{Value: 96, Unit: "MiB"}
	domain.QEMUCommandline = &libvirtxml.DomainQEMUCommandline{Args: []libvirtxml.DomainQEMUCommandlineArg{
		{Value: "-device"}, {Value: "loader,file=" + fill + ",addr=0x2000000,force-raw=on"},
	}}

	nw := libvirtd.NewNetworkT(t)
	source := libvirtd.StartT(t, libvirtd.Options{Network: nw, Alias: "source"})
	target := libvirtd.StartT(t, libvirtd.Options{Network: nw, Alias: "target"})
	for _, n := range []*libvirtd.Node{source, target} {
		// The target starts its QEMU with the same command line.
		if _, err := n.Exec(ctx, "sh", "-c", "head -c "+fillSize+" /dev/urandom > "+fill); err != nil {
			t.Fatal(err)
		}
	}
	sourceConn, targetConn := source.ConnectT(t), target.ConnectT(t)
	dom, err := domainrun.DefineAndStart(ctx, sourceConn, domain)
	if err != nil {
		t.Fatal(err)
	}
	defer dom.Free()

	// 1 MiB/s, libvirt's smallest limit: the random data keeps the job
	// running long enough to be cancelled.
	params := &hooksv1alpha1.MigrationParams{MigrateUri: str("tcp://" + target.Hostname), Bandwidth: u64(1)}
	migCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	result := make(chan error, 1)
	go func() { result <- domainrun.Migrate(migCtx, dom, target.PeerURI(), p2pLive, params) }()

	// Cancel once RAM is being transferred. The job is watched on a
	// connection of its own, as Migrate's abort is sent: a call on the
	// connection MigrateToURI3 occupies may wait for that call to return.
	watched, err := source.ConnectT(t).LookupDomainByName(domain.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer watched.Free()
	waitFor(t, ctx, "the migration job to transfer data", func() (bool, error) {
		select {
		case err := <-result:
			t.Fatalf("migration ended before it was cancelled: %v", err)
		default:
		}
		info, err := watched.GetJobInfo()
		if err != nil {
			return false, err
		}
		return info.Type == libvirt.DOMAIN_JOB_UNBOUNDED && info.DataProcessed > 0, nil
	})
	cancel()

	err = <-result
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Migrate after cancel: %v, want an error wrapping context.Canceled", err)
	}
	// Migrate returned with libvirt's own account of the job's end, so it
	// waited for libvirt. Which side's error that is depends on who noticed
	// first: the source's QEMU (the job cancelled, "operation aborted") or
	// the target's, which fails to load the cut stream (libvirt's QEMU
	// driver then reports the target's "load of migration failed" as an
	// internal error); seen both on a loaded machine.
	lverr, ok := errors.AsType[libvirt.Error](err)
	abortedAtSource := ok && lverr.Code == libvirt.ERR_OPERATION_ABORTED
	cutAtTarget := ok && lverr.Code == libvirt.ERR_INTERNAL_ERROR && lverr.Domain == libvirt.FROM_QEMU
	if !abortedAtSource && !cutAtTarget {
		t.Fatalf("Migrate after cancel: %v, want libvirt's error from the migration call too: operation aborted, or QEMU's internal error of the cut stream", err)
	}
	t.Logf("cancelled migration: %v", err)
	if info, err := watched.GetJobInfo(); err != nil || info.Type != libvirt.DOMAIN_JOB_NONE {
		t.Fatalf("the source's job after Migrate returned: %+v, %v; want none", info, err)
	}
	if state, _ := domainState(t, sourceConn, domain.Name); state != libvirt.DOMAIN_RUNNING {
		t.Fatalf("source domain after the abort: state %d, want running", state)
	}
	if state, _ := domainState(t, targetConn, domain.Name); state == libvirt.DOMAIN_RUNNING {
		t.Fatal("the domain runs on the target although the migration was aborted")
	}
}

// waitFor polls cond until it holds, failing the test when ctx ends first.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() (bool, error)) {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		ok, err := cond()
		if ok {
			return
		}
		lastErr = err
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v (last error: %v)", what, ctx.Err(), lastErr)
		case <-tick.C:
		}
	}
}
