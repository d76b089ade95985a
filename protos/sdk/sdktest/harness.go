// SPDX-License-Identifier: Apache-2.0

package sdktest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/kubevirt-plugins/framework/api/socketpath"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
	"github.com/kubevirt-plugins/framework/protos/sdk"
)

// Dial opens a client connection to a hook socket with the SDK's message
// size limits. The caller closes it. It connects as virt-launcher and
// virt-handler do, through api/socketpath's checked dial: the socket must
// not be a symlink, and a path of the full 108 bytes admission accepts is
// reached too.
func Dial(socketPath string) (*grpc.ClientConn, error) {
	dir := socketpath.NewRoot(filepath.Dir(socketPath))
	name := []string{filepath.Base(socketPath)}
	return grpc.NewClient("passthrough:///"+socketPath,
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return dir.Dial(ctx, name) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(sdk.MaxMessageSize), grpc.MaxCallSendMsgSize(sdk.MaxMessageSize)),
	)
}

// StartLauncher serves handler as plugin pluginName with the socket root in
// a fresh temporary directory (short enough for the 108-byte socket path
// limit) and returns the socket path. The server stops, and the directory
// is removed, when the test ends; a Serve error fails the test.
func StartLauncher(t testing.TB, pluginName string, handler any, opts ...sdk.Option) string {
	t.Helper()
	root := shortTempDir(t)
	srv, err := sdk.NewLauncherServer(pluginName, handler, append([]sdk.Option{sdk.WithSocketRoot(root)}, opts...)...)
	if err != nil {
		t.Fatalf("start launcher hook server: %v", err)
	}
	serveUntilCleanup(t, srv)
	return srv.SocketPath()
}

// StartNode serves handler on a socket in a fresh temporary directory and
// returns the socket path; see StartLauncher.
func StartNode(t testing.TB, handler sdk.NodeHookHandler, opts ...sdk.Option) string {
	t.Helper()
	dir := shortTempDir(t)
	srv, err := sdk.NewNodeServer(dir+"/node.sock", handler, opts...)
	if err != nil {
		t.Fatalf("start node hook server: %v", err)
	}
	serveUntilCleanup(t, srv)
	return srv.SocketPath()
}

func shortTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hk")
	if err != nil {
		t.Fatalf("temporary socket directory: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func serveUntilCleanup(t testing.TB, srv *sdk.Server) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("hook server: %v", err)
		}
	})
}

// LauncherContract describes a sidecar for RunLauncherContract and
// LauncherChecks. Every field has a default; the zero value checks a
// sidecar permitted nothing.
type LauncherContract struct {
	// Permitted are the hook points the sidecar's Plugin lists in
	// permittedHooks: these RPCs must be implemented. Implementing another
	// one is a warning.
	Permitted []string
	// VMI is the VMI JSON sent in every request. Default: VMIJSON of
	// default/testvmi without labels.
	VMI []byte
	// DomainXML is the domain sent to GuestDefinition. Default:
	// KubeVirtDomainXML, a domain as KubeVirt generates it.
	DomainXML []byte
	// Artifacts name the boot artifacts to give PreBoot. The checks never
	// touch these paths: they copy the cloud-init ISO into a temporary
	// ephemeral disk directory of their own and send that copy. Default
	// (nil, or no CloudInitIso): a stand-in NoCloud ISO (StandInISOFiles)
	// in that directory, so that a sidecar that changes only the ISO is
	// seen doing it.
	Artifacts *hooksv1alpha1.BootArtifacts
	// NoCloudInitISO gives PreBoot no ISO at all, as for a VMI without a
	// cloud-init volume. The checks that watch files then WARN unless they
	// see a change: without an ISO they cannot tell a sidecar keeping the
	// rules from one that breaks them only when it has an ISO.
	NoCloudInitISO bool
	// Flags and Params are sent to PreMigrationSource. Default when both
	// are empty: DefaultMigrationFlags and DefaultMigrationParams.
	Flags  uint64
	Params *hooksv1alpha1.MigrationParams
	// CallTimeout bounds each call. Default: 10s.
	CallTimeout time.Duration
	// ShortDeadline is the deadline of the calls that check the context is
	// honoured: long enough for the request to reach the handler, short
	// enough to end a slow handler. Default: 300ms.
	ShortDeadline time.Duration
	// Settle is how long the boot artifacts are watched after a PreBoot
	// call returned. Default: 2s.
	Settle time.Duration
	// Grace is how much longer than an undisturbed call the call after a
	// call that hit its deadline may take. Default: 1s.
	Grace time.Duration

	// first records the sidecar's first answer to the contract's domain,
	// shared by the checks of one LauncherChecks list.
	first *firstAnswer
}

// DefaultMigrationFlags are the flags PreMigrationSource is sent by
// default: those KubeVirt passes for a live migration.
const DefaultMigrationFlags = sdk.MigrateLive | sdk.MigratePeer2Peer | sdk.MigratePersistDest | sdk.MigrateUndefineSource

// DefaultMigrationParams returns the parameters PreMigrationSource is sent
// by default.
func DefaultMigrationParams() *hooksv1alpha1.MigrationParams {
	uri, name := "tcp://192.0.2.10:49152", "default_testvmi"
	bandwidth := uint64(0)
	return &hooksv1alpha1.MigrationParams{
		MigrateUri:      &hooksv1alpha1.StringParam{Value: &uri},
		DestinationName: &hooksv1alpha1.StringParam{Value: &name},
		Bandwidth:       &hooksv1alpha1.Uint64Param{Value: &bandwidth},
	}
}

func (c LauncherContract) withDefaults() LauncherContract {
	if c.VMI == nil {
		c.VMI = VMIJSON("default", "testvmi", nil, nil)
	}
	if c.DomainXML == nil {
		c.DomainXML = []byte(KubeVirtDomainXML)
	}
	if c.Flags == 0 && c.Params == nil {
		c.Flags, c.Params = uint64(DefaultMigrationFlags), DefaultMigrationParams()
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = 10 * time.Second
	}
	if c.ShortDeadline == 0 {
		c.ShortDeadline = 300 * time.Millisecond
	}
	if c.Settle == 0 {
		c.Settle = 2 * time.Second
	}
	if c.Grace == 0 {
		c.Grace = time.Second
	}
	return c
}

// LauncherChecks returns the checks that apply to a sidecar with the
// contract's permitted hook points, in the order they should run.
func LauncherChecks(c LauncherContract) []Check {
	c = c.withDefaults()
	c.first = &firstAnswer{}
	checks := []Check{checkPermittedImplemented(c), checkOnlyPermitted(c)}
	if slices.Contains(c.Permitted, sdk.HookGuestDefinition) {
		checks = append(checks,
			checkGuestDefinitionBothContexts(c),
			checkGuestDefinitionParses(c),
			checkGuestDefinitionKeepsDomain(c),
			checkGuestDefinitionRepeatable(c),
			checkGuestDefinitionIdempotent(c),
			checkLauncherContextHonoured(c, sdk.HookGuestDefinition),
		)
	}
	if slices.Contains(c.Permitted, sdk.HookPreBoot) {
		checks = append(checks,
			checkPreBootNoChangeAfterReturn(c),
			checkPreBootContextHonoured(c),
			checkPreBootAtomicWrites(c),
			checkPreBootRepeatable(c),
		)
	}
	if slices.Contains(c.Permitted, sdk.HookPreMigrationSource) {
		checks = append(checks,
			checkPreMigrationSourceResponseValid(c),
			checkPreMigrationSourceIdempotent(c),
			checkLauncherContextHonoured(c, sdk.HookPreMigrationSource),
		)
	}
	return checks
}

// RunLauncherContract dials socketPath and runs LauncherChecks as subtests
// of t: a FAIL fails the subtest, a WARN is logged.
func RunLauncherContract(t *testing.T, socketPath string, c LauncherContract) {
	t.Helper()
	runContract(t, socketPath, LauncherChecks(c))
}

func runContract(t *testing.T, socketPath string, checks []Check) {
	t.Helper()
	conn, err := Dial(socketPath)
	if err != nil {
		t.Fatalf("dial %s: %v", socketPath, err)
	}
	defer conn.Close()
	for _, c := range checks {
		t.Run(c.Name, func(t *testing.T) {
			r := c.Run(context.Background(), conn)
			switch r.Status {
			case Fail:
				t.Error(r.String())
			case Warn:
				t.Log(r.String())
			}
		})
	}
}

// NodeContract describes a node hook server for RunNodeContract and
// NodeChecks.
type NodeContract struct {
	// HookPoints are the hook points to call: the Plugin's
	// nodeHooks[].permittedHooks. Default: all.
	HookPoints []sdk.NodeHookPoint
	// VMI is the VMI JSON sent. Default: VMIJSON of default/testvmi.
	VMI []byte
	// NodeName is sent in the node context. Default: "node01".
	NodeName string
	// CallTimeout bounds each call. Default: 10s.
	CallTimeout time.Duration
	// ShortDeadline and Grace: see LauncherContract. Defaults: 300ms, 1s.
	ShortDeadline time.Duration
	Grace         time.Duration
}

func (c NodeContract) withDefaults() NodeContract {
	if c.HookPoints == nil {
		c.HookPoints = sdk.NodeHookPoints()
	}
	if c.VMI == nil {
		c.VMI = VMIJSON("default", "testvmi", nil, nil)
	}
	if c.NodeName == "" {
		c.NodeName = "node01"
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = 10 * time.Second
	}
	if c.ShortDeadline == 0 {
		c.ShortDeadline = 300 * time.Millisecond
	}
	if c.Grace == 0 {
		c.Grace = time.Second
	}
	return c
}

// NodeChecks returns, per hook point, the checks that ExecuteNodeHook is
// implemented and repeatable and that it honours the request context.
func NodeChecks(c NodeContract) []Check {
	c = c.withDefaults()
	var checks []Check
	for _, hp := range c.HookPoints {
		checks = append(checks, checkNodeRepeatable(c, hp), checkNodeContextHonoured(c, hp))
	}
	return checks
}

// RunNodeContract dials socketPath and runs NodeChecks as subtests of t.
func RunNodeContract(t *testing.T, socketPath string, c NodeContract) {
	t.Helper()
	runContract(t, socketPath, NodeChecks(c))
}
