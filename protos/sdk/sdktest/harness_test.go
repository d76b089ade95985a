package sdktest_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"libvirt.org/go/libvirtxml"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
	"github.com/kubevirt-plugins/framework/protos/sdk"
	"github.com/kubevirt-plugins/framework/protos/sdk/sdktest"
)

// appendingWatchdog adds a watchdog on every call: not idempotent.
type appendingWatchdog struct{}

func (appendingWatchdog) GuestDefinition(_ context.Context, r *sdk.GuestDefinitionRequest) (*libvirtxml.Domain, error) {
	r.Domain.Devices.Watchdogs = append(r.Domain.Devices.Watchdogs, libvirtxml.DomainWatchdog{Model: "i6300esb"})
	return r.Domain, nil
}

// settingWatchdog sets exactly one watchdog: idempotent.
type settingWatchdog struct{}

func (settingWatchdog) GuestDefinition(_ context.Context, r *sdk.GuestDefinitionRequest) (*libvirtxml.Domain, error) {
	r.Domain.Devices.Watchdogs = []libvirtxml.DomainWatchdog{{Model: "i6300esb", Action: "reset"}}
	return r.Domain, nil
}

type bootAndDefine struct{ settingWatchdog }

func (bootAndDefine) PreBoot(context.Context, *sdk.PreBootRequest) error { return nil }

func dial(t *testing.T, socket string) *grpc.ClientConn {
	t.Helper()
	conn, err := sdktest.Dial(socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func TestCheckGuestDefinitionIdempotentDetectsRepeatedChange(t *testing.T) {
	cases := []struct {
		name    string
		handler any
		wantErr bool
	}{
		{"appends on every call", appendingWatchdog{}, true},
		{"sets a fixed value", settingWatchdog{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conn := dial(t, sdktest.StartLauncher(t, "demo", tc.handler))
			err := sdktest.CheckGuestDefinitionIdempotent(context.Background(), conn, sdktest.LauncherContract{})
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
		})
	}
}

func TestCheckOnlyPermittedRPCsDetectsMismatch(t *testing.T) {
	cases := []struct {
		name      string
		permitted []string
		wantErr   bool
	}{
		{"exact", []string{sdk.HookGuestDefinition, sdk.HookPreBoot}, false},
		{"implements a hook point it is not permitted", []string{sdk.HookGuestDefinition}, true},
		{"permitted hook point not implemented", []string{sdk.HookGuestDefinition, sdk.HookPreBoot, sdk.HookPreMigrationSource}, true},
	}
	conn := dial(t, sdktest.StartLauncher(t, "demo", bootAndDefine{}))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := sdktest.CheckOnlyPermittedRPCs(context.Background(), conn, sdktest.LauncherContract{Permitted: tc.permitted})
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
		})
	}
}

// rawServer answers GuestDefinition with whatever bytes it is given,
// bypassing the SDK, to show the checks catch a malformed response.
type rawServer struct {
	hooksv1alpha1.UnimplementedLauncherHookServiceServer
	reply []byte
}

func (s rawServer) GuestDefinition(context.Context, *hooksv1alpha1.GuestDefinitionRequest) (*hooksv1alpha1.GuestDefinitionResponse, error) {
	return &hooksv1alpha1.GuestDefinitionResponse{DomainXml: s.reply}, nil
}

func serveRaw(t *testing.T, reply string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "raw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	l, err := net.Listen("unix", filepath.Join(dir, "hook.sock"))
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	hooksv1alpha1.RegisterLauncherHookServiceServer(g, rawServer{reply: []byte(reply)})
	go func() { _ = g.Serve(l) }()
	t.Cleanup(g.Stop)
	return filepath.Join(dir, "hook.sock")
}

func TestCheckGuestDefinitionParsesDetectsMalformedDomain(t *testing.T) {
	cases := []struct {
		name, reply string
		wantErr     bool
	}{
		{"not XML", "<domain", true},
		{"no name", `<domain type="kvm"></domain>`, true},
		{"a domain", `<domain type="kvm"><name>x</name></domain>`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conn := dial(t, serveRaw(t, tc.reply))
			_, err := sdktest.CheckGuestDefinitionParses(context.Background(), conn, sdktest.LauncherContract{})
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
		})
	}
}

func TestCheckContextHonouredDetectsDeadServer(t *testing.T) {
	socket := serveRaw(t, `<domain type="kvm"><name>x</name></domain>`)
	conn := dial(t, socket)
	if err := sdktest.CheckContextHonoured(context.Background(), conn, sdk.HookGuestDefinition, sdktest.LauncherContract{}); err != nil {
		t.Fatalf("live server: %v", err)
	}
	// A server that is gone answers Unavailable on the follow-up call.
	gone := dial(t, filepath.Join(t.TempDir(), "missing.sock"))
	if err := sdktest.CheckContextHonoured(context.Background(), gone, sdk.HookGuestDefinition, sdktest.LauncherContract{}); err == nil {
		t.Fatal("check passed against a socket nobody serves")
	}
}

func TestRunLauncherContractPassesCompliantSidecar(t *testing.T) {
	sdktest.RunLauncherContract(t, sdktest.StartLauncher(t, "demo", bootAndDefine{}), sdktest.LauncherContract{
		Permitted: []string{sdk.HookGuestDefinition, sdk.HookPreBoot},
	})
}

type failingNode struct{ calls int }

func (f *failingNode) ExecuteNodeHook(context.Context, *sdk.NodeHookRequest) error {
	f.calls++
	if f.calls%2 == 0 {
		return context.Canceled
	}
	return nil
}

func TestCheckNodeHookRepeatableDetectsFlappingServer(t *testing.T) {
	conn := dial(t, sdktest.StartNode(t, &failingNode{}))
	if err := sdktest.CheckNodeHookRepeatable(context.Background(), conn, sdk.NodeHookPreVMStart, sdktest.NodeContract{}); err == nil {
		t.Fatal("a server answering OK then an error for the same event passed")
	}
}
