package sdktest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"libvirt.org/go/libvirtxml"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
	"github.com/kubevirt-plugins/framework/protos/sdk"
)

// Dial opens a client connection to a hook socket with the SDK's message
// size limits. The caller closes it.
func Dial(socketPath string) (*grpc.ClientConn, error) {
	return grpc.NewClient("unix://"+socketPath,
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

// LauncherContract describes a sidecar for RunLauncherContract.
type LauncherContract struct {
	// Permitted are the hook points the sidecar's Plugin lists in
	// permittedHooks: exactly these RPCs must be implemented.
	Permitted []string
	// VMI is the VMI JSON sent in every request. Default: VMIJSON of
	// default/testvmi without labels.
	VMI []byte
	// DomainXML is the domain sent to GuestDefinition. Default:
	// MinimalDomainXML.
	DomainXML []byte
	// Artifacts are sent to PreBoot. Default: none (empty paths).
	Artifacts *hooksv1alpha1.BootArtifacts
	// Flags and Params are sent to PreMigrationSource. Default: none.
	Flags  uint64
	Params *hooksv1alpha1.MigrationParams
	// CallTimeout bounds each call. Default: 10s.
	CallTimeout time.Duration
}

func (c LauncherContract) withDefaults() LauncherContract {
	if c.VMI == nil {
		c.VMI = VMIJSON("default", "testvmi", nil, nil)
	}
	if c.DomainXML == nil {
		c.DomainXML = []byte(MinimalDomainXML)
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = 10 * time.Second
	}
	return c
}

// RunLauncherContract dials socketPath and runs every check that applies to
// the permitted hook points as subtests of t.
func RunLauncherContract(t *testing.T, socketPath string, c LauncherContract) {
	t.Helper()
	c = c.withDefaults()
	conn, err := Dial(socketPath)
	if err != nil {
		t.Fatalf("dial %s: %v", socketPath, err)
	}
	defer conn.Close()
	ctx := context.Background()
	t.Run("OnlyPermittedRPCsImplemented", func(t *testing.T) {
		if err := CheckOnlyPermittedRPCs(ctx, conn, c); err != nil {
			t.Error(err)
		}
	})
	if contains(c.Permitted, sdk.HookGuestDefinition) {
		t.Run("GuestDefinitionParsesAsDomain", func(t *testing.T) {
			if _, err := CheckGuestDefinitionParses(ctx, conn, c); err != nil {
				t.Error(err)
			}
		})
		t.Run("GuestDefinitionIdempotent", func(t *testing.T) {
			if err := CheckGuestDefinitionIdempotent(ctx, conn, c); err != nil {
				t.Error(err)
			}
		})
	}
	for _, hook := range c.Permitted {
		t.Run("ContextHonoured/"+hook, func(t *testing.T) {
			if err := CheckContextHonoured(ctx, conn, hook, c); err != nil {
				t.Error(err)
			}
		})
	}
}

// call invokes the RPC of a launcher hook point with the contract's inputs.
func call(ctx context.Context, conn grpc.ClientConnInterface, hook string, c LauncherContract) (any, error) {
	cl := hooksv1alpha1.NewLauncherHookServiceClient(conn)
	switch hook {
	case sdk.HookGuestDefinition:
		return cl.GuestDefinition(ctx, guestDefinitionRequest(c, c.DomainXML))
	case sdk.HookPreBoot:
		return cl.PreBoot(ctx, &hooksv1alpha1.PreBootRequest{Vmi: c.VMI, Artifacts: c.Artifacts})
	case sdk.HookPreMigrationSource:
		return cl.PreMigrationSource(ctx, &hooksv1alpha1.PreMigrationSourceRequest{Vmi: c.VMI, Flags: c.Flags, Params: c.Params})
	}
	return nil, fmt.Errorf("unknown launcher hook point %q", hook)
}

func guestDefinitionRequest(c LauncherContract, domainXML []byte) *hooksv1alpha1.GuestDefinitionRequest {
	return &hooksv1alpha1.GuestDefinitionRequest{
		DomainXml:      domainXML,
		Vmi:            c.VMI,
		SidecarContext: &hooksv1alpha1.SidecarContext{InvocationContext: string(sdk.InvocationBoot)},
	}
}

// CheckOnlyPermittedRPCs calls every launcher RPC: the permitted ones must
// not answer Unimplemented, the others must.
func CheckOnlyPermittedRPCs(ctx context.Context, conn grpc.ClientConnInterface, c LauncherContract) error {
	c = c.withDefaults()
	var errs []error
	for _, hook := range []string{sdk.HookGuestDefinition, sdk.HookPreBoot, sdk.HookPreMigrationSource} {
		callCtx, cancel := context.WithTimeout(ctx, c.CallTimeout)
		_, err := call(callCtx, conn, hook, c)
		cancel()
		unimplemented := status.Code(err) == codes.Unimplemented
		switch permitted := contains(c.Permitted, hook); {
		case permitted && unimplemented:
			errs = append(errs, fmt.Errorf("%s is permitted but answers Unimplemented: %v", hook, err))
		case !permitted && !unimplemented:
			errs = append(errs, fmt.Errorf("%s is not permitted but is implemented (answered %v, want code Unimplemented)", hook, status.Code(err)))
		}
	}
	return errors.Join(errs...)
}

// CheckGuestDefinitionParses calls GuestDefinition once and checks that it
// succeeds and returns a domain libvirtxml parses. It returns the domain.
func CheckGuestDefinitionParses(ctx context.Context, conn grpc.ClientConnInterface, c LauncherContract) (*libvirtxml.Domain, error) {
	c = c.withDefaults()
	out, err := guestDefinition(ctx, conn, c, c.DomainXML)
	if err != nil {
		return nil, err
	}
	dom := &libvirtxml.Domain{}
	if err := dom.Unmarshal(string(out)); err != nil {
		return nil, fmt.Errorf("GuestDefinition response does not parse as a domain: %w", err)
	}
	if dom.Name == "" || dom.Type == "" {
		return nil, fmt.Errorf("GuestDefinition response lacks the domain name or type:\n%s", out)
	}
	return dom, nil
}

// CheckGuestDefinitionIdempotent calls GuestDefinition, then calls it again
// on the first call's output, and checks that both outputs are the same
// domain.
func CheckGuestDefinitionIdempotent(ctx context.Context, conn grpc.ClientConnInterface, c LauncherContract) error {
	c = c.withDefaults()
	first, err := guestDefinition(ctx, conn, c, c.DomainXML)
	if err != nil {
		return err
	}
	second, err := guestDefinition(ctx, conn, c, first)
	if err != nil {
		return fmt.Errorf("second call, on the first call's output: %w", err)
	}
	a, err := canonicalDomain(first)
	if err != nil {
		return fmt.Errorf("first response: %w", err)
	}
	b, err := canonicalDomain(second)
	if err != nil {
		return fmt.Errorf("second response: %w", err)
	}
	if a != b {
		return fmt.Errorf("GuestDefinition is not idempotent: called on its own output it changed the domain\nfirst:\n%s\nsecond:\n%s", a, b)
	}
	return nil
}

func guestDefinition(ctx context.Context, conn grpc.ClientConnInterface, c LauncherContract, domainXML []byte) ([]byte, error) {
	callCtx, cancel := context.WithTimeout(ctx, c.CallTimeout)
	defer cancel()
	resp, err := hooksv1alpha1.NewLauncherHookServiceClient(conn).GuestDefinition(callCtx, guestDefinitionRequest(c, domainXML))
	if err != nil {
		return nil, fmt.Errorf("GuestDefinition: %w", err)
	}
	return resp.GetDomainXml(), nil
}

// canonicalDomain re-encodes domain XML so that attribute quoting,
// whitespace and element order of equal domains compare equal.
func canonicalDomain(xml []byte) (string, error) {
	dom := &libvirtxml.Domain{}
	if err := dom.Unmarshal(string(xml)); err != nil {
		return "", fmt.Errorf("parse domain: %w", err)
	}
	return dom.Marshal()
}

// CheckContextHonoured calls the RPC of hook with a deadline that has
// already passed and checks that it ends with DeadlineExceeded or Canceled,
// then checks that the server still answers a call with a live context
// (any code but Unavailable and Unimplemented).
func CheckContextHonoured(ctx context.Context, conn grpc.ClientConnInterface, hook string, c LauncherContract) error {
	c = c.withDefaults()
	expired, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	_, err := call(expired, conn, hook, c)
	cancel()
	if code := status.Code(err); code != codes.DeadlineExceeded && code != codes.Canceled {
		return fmt.Errorf("%s with an expired deadline answered %v, want DeadlineExceeded or Canceled", hook, code)
	}
	live, cancel := context.WithTimeout(ctx, c.CallTimeout)
	defer cancel()
	_, err = call(live, conn, hook, c)
	if code := status.Code(err); code == codes.Unavailable || code == codes.Unimplemented || code == codes.DeadlineExceeded {
		return fmt.Errorf("%s after a call with an expired deadline: %w", hook, err)
	}
	return nil
}

// NodeContract describes a node hook server for RunNodeContract.
type NodeContract struct {
	// HookPoints are the hook points to call. Default: all.
	HookPoints []sdk.NodeHookPoint
	// VMI is the VMI JSON sent. Default: VMIJSON of default/testvmi.
	VMI []byte
	// NodeName is sent in the node context. Default: "node01".
	NodeName string
	// CallTimeout bounds each call. Default: 10s.
	CallTimeout time.Duration
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
	return c
}

// RunNodeContract dials socketPath and checks, per hook point, that
// ExecuteNodeHook is implemented, that it may be called twice for the same
// event, and that the request context is honoured.
func RunNodeContract(t *testing.T, socketPath string, c NodeContract) {
	t.Helper()
	c = c.withDefaults()
	conn, err := Dial(socketPath)
	if err != nil {
		t.Fatalf("dial %s: %v", socketPath, err)
	}
	defer conn.Close()
	for _, hp := range c.HookPoints {
		t.Run(string(hp), func(t *testing.T) {
			if err := CheckNodeHookRepeatable(context.Background(), conn, hp, c); err != nil {
				t.Error(err)
			}
			if err := CheckNodeContextHonoured(context.Background(), conn, hp, c); err != nil {
				t.Error(err)
			}
		})
	}
}

func nodeCall(ctx context.Context, conn grpc.ClientConnInterface, hp sdk.NodeHookPoint, c NodeContract) error {
	_, err := hooksv1alpha1.NewNodeHookServiceClient(conn).ExecuteNodeHook(ctx, &hooksv1alpha1.ExecuteNodeHookRequest{
		HookPoint:   string(hp),
		Vmi:         c.VMI,
		NodeContext: &hooksv1alpha1.NodeContext{NodeName: c.NodeName},
	})
	return err
}

// CheckNodeHookRepeatable calls ExecuteNodeHook twice for the same event
// and checks that both calls give the same code and neither is
// Unimplemented: node hooks fire again on reconcile retries.
func CheckNodeHookRepeatable(ctx context.Context, conn grpc.ClientConnInterface, hp sdk.NodeHookPoint, c NodeContract) error {
	c = c.withDefaults()
	var codesSeen [2]codes.Code
	for i := range codesSeen {
		callCtx, cancel := context.WithTimeout(ctx, c.CallTimeout)
		err := nodeCall(callCtx, conn, hp, c)
		cancel()
		codesSeen[i] = status.Code(err)
		if codesSeen[i] == codes.Unimplemented {
			return fmt.Errorf("ExecuteNodeHook(%s) answers Unimplemented: %w", hp, err)
		}
	}
	if codesSeen[0] != codesSeen[1] {
		return fmt.Errorf("ExecuteNodeHook(%s) called twice for one event answered %v, then %v", hp, codesSeen[0], codesSeen[1])
	}
	return nil
}

// CheckNodeContextHonoured is CheckContextHonoured for ExecuteNodeHook.
func CheckNodeContextHonoured(ctx context.Context, conn grpc.ClientConnInterface, hp sdk.NodeHookPoint, c NodeContract) error {
	c = c.withDefaults()
	expired, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	err := nodeCall(expired, conn, hp, c)
	cancel()
	if code := status.Code(err); code != codes.DeadlineExceeded && code != codes.Canceled {
		return fmt.Errorf("ExecuteNodeHook(%s) with an expired deadline answered %v, want DeadlineExceeded or Canceled", hp, code)
	}
	live, cancel := context.WithTimeout(ctx, c.CallTimeout)
	defer cancel()
	err = nodeCall(live, conn, hp, c)
	if code := status.Code(err); code == codes.Unavailable || code == codes.Unimplemented || code == codes.DeadlineExceeded {
		return fmt.Errorf("ExecuteNodeHook(%s) after a call with an expired deadline: %w", hp, err)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
