// SPDX-License-Identifier: Apache-2.0

//go:build cgo

package kubevirthost_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"libvirt.org/go/libvirt"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/kubevirthost"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// migrationSidecar answers PreMigrationSource with resp, or err.
type migrationSidecar struct {
	hooksv1alpha1.UnimplementedLauncherHookServiceServer
	resp *hooksv1alpha1.PreMigrationSourceResponse
	err  error
	got  chan *hooksv1alpha1.PreMigrationSourceRequest
}

func (s *migrationSidecar) PreMigrationSource(_ context.Context, req *hooksv1alpha1.PreMigrationSourceRequest) (*hooksv1alpha1.PreMigrationSourceResponse, error) {
	s.got <- req
	return s.resp, s.err
}

// serveMigrationSidecar serves s on name's socket under a new socket root
// and returns a Launcher holding one Plugin, name, with a PreMigrationSource
// sidecar hook under failure strategy Fail.
func serveMigrationSidecar(t *testing.T, name string, s *migrationSidecar) *kubevirthost.Launcher {
	t.Helper()
	// Short: a Unix socket path has at most 107 bytes.
	root, err := os.MkdirTemp("", "kvp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	if err := os.MkdirAll(filepath.Join(root, name), 0o755); err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("unix", filepath.Join(root, name, "hooks.sock"))
	if err != nil {
		t.Fatal(err)
	}
	s.got = make(chan *hooksv1alpha1.PreMigrationSourceRequest, 1)
	srv := grpc.NewServer()
	hooksv1alpha1.RegisterLauncherHookServiceServer(srv, s)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	l := kubevirthost.New(kubevirthost.Options{Pipeline: pipeline.Options{SocketRoot: root}})
	t.Cleanup(func() { _ = l.Close() })
	if err := l.SetPlugins(handed(t, sidecarPlugin(name, pluginv1alpha1.PreMigrationSource, pluginv1alpha1.Fail))); err != nil {
		t.Fatal(err)
	}
	return l
}

// What KubeVirt's migration source hands MigrateToURI3 for a VMI on the pod
// network: the proxy URI, the target's XML and name, a bandwidth.
func kubevirtMigrationArgs() (libvirt.DomainMigrateFlags, *libvirt.DomainMigrateParameters) {
	return libvirt.MIGRATE_LIVE | libvirt.MIGRATE_PEER2PEER | libvirt.MIGRATE_PERSIST_DEST | libvirt.MIGRATE_AUTO_CONVERGE,
		&libvirt.DomainMigrateParameters{
			URISet: true, URI: "unix:///var/run/kubevirt/migrationproxy/uid-source-49152",
			DestXMLSet: true, DestXML: "<domain><name>default_web-01</name></domain>",
			PersistXMLSet: true, PersistXML: "<domain><name>default_web-01</name></domain>",
			DestNameSet: true, DestName: "default_web-01",
			BandwidthSet: true, Bandwidth: 64,
		}
}

func TestMigrateToURI3ArgsHandsLibvirtWhatTheHooksAnswered(t *testing.T) {
	two := int32(2)
	s := &migrationSidecar{resp: &hooksv1alpha1.PreMigrationSourceResponse{
		SetFlags:   uint64(libvirt.MIGRATE_PARALLEL),
		ClearFlags: uint64(libvirt.MIGRATE_AUTO_CONVERGE),
		Params: &hooksv1alpha1.MigrationParams{
			ParallelConnections: &hooksv1alpha1.IntParam{Value: &two},
			Bandwidth:           &hooksv1alpha1.Uint64Param{},
			BandwidthPostcopy:   &hooksv1alpha1.Uint64Param{},
		},
	}}
	l := serveMigrationSidecar(t, "migration-tuner", s)
	flags, params := kubevirtMigrationArgs()
	gotFlags, got, err := l.MigrateToURI3Args(t.Context(), vmi(), flags, params)
	if err != nil {
		t.Fatal(err)
	}
	req := <-s.got
	if req.Flags != uint64(flags) || req.Params.GetMigrateUri().GetValue() != params.URI || req.Params.GetBandwidth().GetValue() != 64 {
		t.Errorf("the sidecar was asked with flags %#x and params %v, want KubeVirt's", req.Flags, req.Params)
	}
	wantFlags := libvirt.MIGRATE_LIVE | libvirt.MIGRATE_PEER2PEER | libvirt.MIGRATE_PERSIST_DEST | libvirt.MIGRATE_PARALLEL
	if gotFlags != wantFlags {
		t.Errorf("flags %#x, want %#x", gotFlags, wantFlags)
	}
	want := &libvirt.DomainMigrateParameters{
		URISet: true, URI: params.URI,
		DestXMLSet: true, DestXML: params.DestXML,
		PersistXMLSet: true, PersistXML: params.PersistXML,
		DestNameSet: true, DestName: params.DestName,
		ParallelConnectionsSet: true, ParallelConnections: 2,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("params\n got %+v\nwant %+v", got, want)
	}
}

func TestMigrateToURI3ArgsWithNoPluginHandsBackWhatItGot(t *testing.T) {
	l := kubevirthost.New(kubevirthost.Options{})
	flags, params := kubevirtMigrationArgs()
	gotFlags, got, err := l.MigrateToURI3Args(t.Context(), vmi(), flags, params)
	if err != nil || gotFlags != flags || got != params {
		t.Fatalf("got %#x, %p, %v; want the same flags and parameters back", gotFlags, got, err)
	}
}

func TestMigrateToURI3ArgsStopsTheMigrationOnAFailingHookUnderFail(t *testing.T) {
	s := &migrationSidecar{err: status.Error(codes.FailedPrecondition, "no migration window now")}
	l := serveMigrationSidecar(t, "maintenance-window", s)
	flags, params := kubevirtMigrationArgs()
	_, got, err := l.MigrateToURI3Args(t.Context(), vmi(), flags, params)
	if err == nil || got != nil {
		t.Fatalf("got %+v, %v; want an error", got, err)
	}
	for _, part := range []string{"maintenance-window", "PreMigrationSource", "no migration window now"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not name %q", err, part)
		}
	}
}

func TestMigrateToURI3ArgsRefusesAParameterTheLinkedLibvirtLacks(t *testing.T) {
	// migrate_disks_target_zero came with libvirt 12.2.0, after Debian 12's
	// 9.0 (this module's tests) and Debian 13's 11.3 (virt-launcher's).
	s := &migrationSidecar{resp: &hooksv1alpha1.PreMigrationSourceResponse{
		Params: &hooksv1alpha1.MigrationParams{MigrateDisksTargetZero: &hooksv1alpha1.StringListParam{Values: []string{"vda"}}},
	}}
	l := serveMigrationSidecar(t, "zeroes", s)
	flags, params := kubevirtMigrationArgs()
	_, _, err := l.MigrateToURI3Args(t.Context(), vmi(), flags, params)
	if err == nil || !strings.Contains(err.Error(), "migrate_disks_target_zero") || !strings.Contains(err.Error(), "web-01") {
		t.Fatalf("error %v; want one naming migrate_disks_target_zero and the VMI", err)
	}
}
