// SPDX-License-Identifier: Apache-2.0

package sdktest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kdomanski/iso9660"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
	"libvirt.org/go/libvirtxml"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
	"github.com/kubevirt-plugins/framework/protos/sdk"
	"github.com/kubevirt-plugins/framework/protos/sdk/sdktest"
)

// The well-behaved sidecar: every hook point, each keeping every rule.
type wellBehaved struct{}

func (wellBehaved) GuestDefinition(_ context.Context, r *sdk.GuestDefinitionRequest) (*libvirtxml.Domain, error) {
	r.Domain.Devices.Watchdogs = []libvirtxml.DomainWatchdog{{Model: "i6300esb", Action: "reset"}}
	return r.Domain, nil
}

func (wellBehaved) PreBoot(ctx context.Context, r *sdk.PreBootRequest) error {
	if r.CloudInitISO == "" {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return sdk.AtomicWriteFile(r.CloudInitISO, []byte("configured\n"), 0o644)
}

func (wellBehaved) PreMigrationSource(context.Context, *sdk.PreMigrationSourceRequest) (*sdk.MigrationChanges, error) {
	return sdk.NewMigrationChanges().SetFlags(sdk.MigrateParallel).SetParallelConnections(4), nil
}

type wellBehavedNode struct{}

func (wellBehavedNode) ExecuteNodeHook(ctx context.Context, _ *sdk.NodeHookRequest) error {
	return ctx.Err()
}

var allLauncherHooks = []string{sdk.HookGuestDefinition, sdk.HookPreBoot, sdk.HookPreMigrationSource}

// isoFile is a stand-in cloud-init ISO the PreBoot checks copy.
func isoFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "noCloud.iso")
	if err := os.WriteFile(path, []byte("original ISO\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func contract(t *testing.T, permitted ...string) sdktest.LauncherContract {
	return sdktest.LauncherContract{
		Permitted: permitted,
		Artifacts: &hooksv1alpha1.BootArtifacts{CloudInitIso: isoFile(t)},
		Settle:    2 * time.Second,
	}
}

// runCheck runs the launcher check named name against socket.
func runCheck(t *testing.T, socket, name string, c sdktest.LauncherContract) sdktest.Result {
	t.Helper()
	for _, check := range sdktest.LauncherChecks(c) {
		if check.Name == name {
			return check.Run(t.Context(), dial(t, socket))
		}
	}
	t.Fatalf("no check %q for permitted hooks %v", name, c.Permitted)
	return sdktest.Result{}
}

func runNodeCheck(t *testing.T, socket, name string, c sdktest.NodeContract) sdktest.Result {
	t.Helper()
	for _, check := range sdktest.NodeChecks(c) {
		if check.Name == name {
			return check.Run(t.Context(), dial(t, socket))
		}
	}
	t.Fatalf("no node check %q", name)
	return sdktest.Result{}
}

// wantStatus fails the test unless r has status want and its detail
// mentions every one of seen.
func wantStatus(t *testing.T, r sdktest.Result, want sdktest.Status, seen ...string) {
	t.Helper()
	t.Log(r.String())
	if r.Status != want {
		t.Fatalf("%s: got %s, want %s", r.Check, r, want)
	}
	for _, s := range seen {
		if !strings.Contains(r.Detail, s) {
			t.Errorf("%s: detail %q does not mention %q", r.Check, r.Detail, s)
		}
	}
}

func dial(t *testing.T, socket string) *grpc.ClientConn {
	t.Helper()
	conn, err := sdktest.Dial(socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// serveRaw serves a LauncherHookService or NodeHookService written without
// the SDK, as a sidecar in another language would be.
func serveRaw(t *testing.T, register func(*grpc.Server)) string {
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
	register(g)
	go func() { _ = g.Serve(l) }()
	t.Cleanup(g.Stop)
	return filepath.Join(dir, "hook.sock")
}

func TestWellBehavedSidecarPassesEveryCheck(t *testing.T) {
	socket := sdktest.StartLauncher(t, "demo", wellBehaved{})
	results := sdktest.RunChecks(t.Context(), dial(t, socket), sdktest.LauncherChecks(contract(t, allLauncherHooks...)))
	if len(results) < 15 {
		t.Fatalf("only %d checks ran", len(results))
	}
	for _, r := range results {
		if r.Status != sdktest.Pass {
			t.Errorf("%s", r)
		}
	}
	node := sdktest.StartNode(t, wellBehavedNode{})
	for _, r := range sdktest.RunChecks(t.Context(), dial(t, node), sdktest.NodeChecks(sdktest.NodeContract{})) {
		if r.Status != sdktest.Pass {
			t.Errorf("%s", r)
		}
	}
}

func TestRunLauncherContractPassesWellBehavedSidecar(t *testing.T) {
	sdktest.RunLauncherContract(t, sdktest.StartLauncher(t, "demo", wellBehaved{}), contract(t, allLauncherHooks...))
}

// firstCallOnly changes the domain on its first call only, remembering that
// it "already did it".
type firstCallOnly struct {
	mu   sync.Mutex
	done bool
}

func (f *firstCallOnly) GuestDefinition(_ context.Context, r *sdk.GuestDefinitionRequest) (*libvirtxml.Domain, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.done {
		r.Domain.Title = "tuned"
		f.done = true
	}
	return r.Domain, nil
}

func TestGuestDefinitionRepeatableFailsSidecarChangingOnlyOnFirstCall(t *testing.T) {
	socket := sdktest.StartLauncher(t, "demo", &firstCallOnly{})
	r := runCheck(t, socket, "GuestDefinition/Repeatable", contract(t, sdk.HookGuestDefinition))
	wantStatus(t, r, sdktest.Fail, "may be called more than once", "call 2 on the same domain returned a different domain", "<title>tuned</title>")
	// The old check, f(f(x)) == f(x), cannot see it.
	wantStatus(t, runCheck(t, sdktest.StartLauncher(t, "demo", &firstCallOnly{}), "GuestDefinition/Idempotent", contract(t, sdk.HookGuestDefinition)), sdktest.Pass)
}

// In a full run the sidecar's first call is made by an earlier check; the
// later calls of Repeatable are compared with it.
func TestGuestDefinitionRepeatableComparesWithTheFirstCallOfTheRun(t *testing.T) {
	socket := sdktest.StartLauncher(t, "demo", &firstCallOnly{})
	results := sdktest.RunChecks(t.Context(), dial(t, socket), sdktest.LauncherChecks(contract(t, sdk.HookGuestDefinition)))
	for _, r := range results {
		if r.Check == "GuestDefinition/Repeatable" {
			wantStatus(t, r, sdktest.Fail, "call 2 on the same domain returned a different domain", "- <title>tuned</title>")
			return
		}
	}
	t.Fatal("no GuestDefinition/Repeatable result")
}

type appendingWatchdog struct{}

func (appendingWatchdog) GuestDefinition(_ context.Context, r *sdk.GuestDefinitionRequest) (*libvirtxml.Domain, error) {
	r.Domain.Devices.Watchdogs = append(r.Domain.Devices.Watchdogs, libvirtxml.DomainWatchdog{Model: "i6300esb"})
	return r.Domain, nil
}

func TestGuestDefinitionIdempotentFailsSidecarAppendingOnEveryCall(t *testing.T) {
	r := runCheck(t, sdktest.StartLauncher(t, "demo", appendingWatchdog{}), "GuestDefinition/Idempotent", contract(t, sdk.HookGuestDefinition))
	wantStatus(t, r, sdktest.Fail, "is idempotent", "changed the domain again", "+ <watchdog")
}

type bootOnly struct{ wellBehaved }

func (b bootOnly) GuestDefinition(ctx context.Context, r *sdk.GuestDefinitionRequest) (*libvirtxml.Domain, error) {
	if r.InvocationContext != sdk.InvocationBoot {
		return nil, errors.New("unexpected invocation context " + string(r.InvocationContext))
	}
	return b.wellBehaved.GuestDefinition(ctx, r)
}

func TestGuestDefinitionBothInvocationContextsFailsSidecarRefusingMigrationTarget(t *testing.T) {
	socket := sdktest.StartLauncher(t, "demo", bootOnly{})
	r := runCheck(t, socket, "GuestDefinition/BothInvocationContexts", contract(t, sdk.HookGuestDefinition))
	wantStatus(t, r, sdktest.Fail, "on the migration target", "GuestDefinition (MigrationTarget)", "unexpected invocation context MigrationTarget")
}

// rawGuestDefinition answers GuestDefinition with fixed bytes.
type rawGuestDefinition struct {
	hooksv1alpha1.UnimplementedLauncherHookServiceServer
	reply []byte
}

func (s rawGuestDefinition) GuestDefinition(context.Context, *hooksv1alpha1.GuestDefinitionRequest) (*hooksv1alpha1.GuestDefinitionResponse, error) {
	return &hooksv1alpha1.GuestDefinitionResponse{DomainXml: s.reply}, nil
}

func serveGuestDefinitionReply(t *testing.T, reply string) string {
	return serveRaw(t, func(g *grpc.Server) {
		hooksv1alpha1.RegisterLauncherHookServiceServer(g, rawGuestDefinition{reply: []byte(reply)})
	})
}

func TestGuestDefinitionReturnsDomainFailsMalformedResponse(t *testing.T) {
	for _, tc := range []struct{ name, reply, seen string }{
		{"NotXML", "<domain", "does not parse as a domain"},
		{"NoName", `<domain type="kvm"></domain>`, "lacks the domain name or type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCheck(t, serveGuestDefinitionReply(t, tc.reply), "GuestDefinition/ReturnsDomain", contract(t, sdk.HookGuestDefinition))
			wantStatus(t, r, sdktest.Fail, "returns a complete libvirt domain", tc.seen)
		})
	}
}

func TestGuestDefinitionKeepsDomainFailsSidecarLosingParts(t *testing.T) {
	for _, tc := range []struct {
		name, reply string
		seen        []string
	}{
		{
			"RebuildsFromATemplate",
			`<domain type="kvm"><name>mynamespace_testvmi</name><memory unit="b">8388608</memory><devices><emulator>/usr/bin/qemu</emulator></devices></domain>`,
			[]string{"<domain> lost every", "<metadata>", "<devices> lost every", "<disk>", "<interface>"},
		},
		{
			// What Python's ElementTree writes: the namespace declared on
			// the root, which libvirtxml's raw <metadata> does not carry.
			"MovesTheMetadataNamespaceToTheRoot",
			strings.NewReplacer(`<domain type="kvm">`, `<domain xmlns:kubevirt="http://kubevirt.io" type="kvm">`,
				`<kubevirt xmlns="http://kubevirt.io">`, `<kubevirt:kubevirt>`, `</kubevirt>`, `</kubevirt:kubevirt>`,
				`<uid></uid>`, `<kubevirt:uid></kubevirt:uid>`).Replace(sdktest.KubeVirtDomainXML),
			[]string{`<metadata> lost <kubevirt xmlns="http://kubevirt.io">`},
		},
		{
			// One of eleven disks gone: every kind of element is still there.
			"DropsOneOfTheDisks",
			withoutDevice(t, sdktest.KubeVirtDomainXML, "disk", "ua-nocloud"),
			[]string{"no device the VMI declares disappears", `<devices> lost <disk> with alias "ua-nocloud"`},
		},
		{
			"RenamesAnInterfaceAlias",
			strings.Replace(sdktest.KubeVirtDomainXML, `<alias name="ua-default">`, `<alias name="net0">`, 1),
			[]string{`<devices> lost <interface> with alias "ua-default"`},
		},
		{
			"RenamesTheDomain",
			strings.Replace(sdktest.KubeVirtDomainXML, "<name>mynamespace_testvmi</name>", "<name>other</name>", 1),
			[]string{`<name> changed from "mynamespace_testvmi" to "other"`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCheck(t, serveGuestDefinitionReply(t, tc.reply), "GuestDefinition/KeepsDomain", contract(t, sdk.HookGuestDefinition))
			wantStatus(t, r, sdktest.Fail, tc.seen...)
		})
	}
	// The fixture itself, returned unchanged, keeps everything.
	wantStatus(t, runCheck(t, serveGuestDefinitionReply(t, sdktest.KubeVirtDomainXML), "GuestDefinition/KeepsDomain", contract(t, sdk.HookGuestDefinition)), sdktest.Pass)
	// A device without an alias (one of the two controllers) may go, and a
	// device the VMI declares may change.
	changed := strings.Replace(withoutDevice(t, sdktest.KubeVirtDomainXML, "controller", `<controller type="usb"`), `<alias name="ua-nocloud"></alias>`, `<alias name="ua-nocloud"></alias><readonly></readonly>`, 1)
	wantStatus(t, runCheck(t, serveGuestDefinitionReply(t, changed), "GuestDefinition/KeepsDomain", contract(t, sdk.HookGuestDefinition)), sdktest.Pass)
}

// withoutDevice removes from domain the <kind> element holding marker.
func withoutDevice(t *testing.T, domain, kind, marker string) string {
	t.Helper()
	at := strings.Index(domain, marker)
	if at < 0 {
		t.Fatalf("no %q in the domain", marker)
	}
	start := strings.LastIndex(domain[:at+len(marker)], "<"+kind+" ")
	end := strings.Index(domain[at:], "</"+kind+">")
	if start < 0 || end < 0 {
		t.Fatalf("no <%s> holding %q in the domain", kind, marker)
	}
	return domain[:start] + domain[at+end+len("</"+kind+">"):]
}

// lateISOWriter ignores its context: it rewrites the ISO 1.5 s into the
// call, whether or not the caller is still waiting.
type lateISOWriter struct{}

func (lateISOWriter) PreBoot(_ context.Context, r *sdk.PreBootRequest) error {
	time.Sleep(1500 * time.Millisecond)
	return sdk.AtomicWriteFile(r.CloudInitISO, []byte("rewritten\n"), 0o644)
}

func TestPreBootContextHonouredFailsSidecarRewritingISOAfterDeadline(t *testing.T) {
	socket := sdktest.StartLauncher(t, "demo", lateISOWriter{})
	c := contract(t, sdk.HookPreBoot)
	wantStatus(t, runCheck(t, socket, "PreBoot/ContextHonoured", c), sdktest.Fail,
		"honour the request context", "a call with a 300ms deadline ended DeadlineExceeded", "noCloud.iso rewritten")
	// Given all the time it wants, it finishes before it answers.
	wantStatus(t, runCheck(t, socket, "PreBoot/NoChangeAfterReturn", c), sdktest.Pass)
}

// backgroundISOWriter answers at once and rewrites the ISO 1.5 s later.
type backgroundISOWriter struct{}

func (backgroundISOWriter) PreBoot(_ context.Context, r *sdk.PreBootRequest) error {
	go func() {
		time.Sleep(1500 * time.Millisecond)
		_ = sdk.AtomicWriteFile(r.CloudInitISO, []byte("rewritten\n"), 0o644)
	}()
	return nil
}

func TestPreBootNoChangeAfterReturnFailsSidecarWritingInBackground(t *testing.T) {
	r := runCheck(t, sdktest.StartLauncher(t, "demo", backgroundISOWriter{}), "PreBoot/NoChangeAfterReturn", contract(t, sdk.HookPreBoot))
	wantStatus(t, r, sdktest.Fail, "finishes its file changes before it answers", "after PreBoot returned OK", "noCloud.iso rewritten")
}

// inPlaceWriter truncates and rewrites the ISO: a reader can see it half
// written.
type inPlaceWriter struct{}

func (inPlaceWriter) PreBoot(_ context.Context, r *sdk.PreBootRequest) error {
	return os.WriteFile(r.CloudInitISO, []byte("configured\n"), 0o644)
}

func TestPreBootAtomicWritesFailsSidecarWritingInPlace(t *testing.T) {
	r := runCheck(t, sdktest.StartLauncher(t, "demo", inPlaceWriter{}), "PreBoot/AtomicWrites", contract(t, sdk.HookPreBoot))
	wantStatus(t, r, sdktest.Fail, "replace files atomically", "rewritten in place (same inode, new content): noCloud.iso")
}

// leavesTempFile replaces the ISO by rename but first makes a copy next
// to it that it never removes, as a write that gave up halfway would.
type leavesTempFile struct{ name string }

func (l leavesTempFile) PreBoot(_ context.Context, r *sdk.PreBootRequest) error {
	if r.CloudInitISO == "" {
		return nil
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(r.CloudInitISO), l.name), []byte("half"), 0o644); err != nil {
		return err
	}
	return sdk.AtomicWriteFile(r.CloudInitISO, []byte("configured\n"), 0o644)
}

func TestPreBootAtomicWritesFailsSidecarLeavingATemporaryFile(t *testing.T) {
	for _, name := range []string{"noCloud.iso.tmp", ".noCloud.iso.new", "network-config~"} {
		t.Run(name, func(t *testing.T) {
			r := runCheck(t, sdktest.StartLauncher(t, "demo", leavesTempFile{name: name}), "PreBoot/AtomicWrites", contract(t, sdk.HookPreBoot))
			wantStatus(t, r, sdktest.Fail, "replace files atomically", "temporary files left behind: "+name)
		})
	}
	// A new file of its own name, next to the ISO, is not a leftover.
	r := runCheck(t, sdktest.StartLauncher(t, "demo", leavesTempFile{name: "extra-disk.img"}), "PreBoot/AtomicWrites", contract(t, sdk.HookPreBoot))
	wantStatus(t, r, sdktest.Pass, "replaced by rename", "extra-disk.img created")
}

// appendingISO adds a line to the ISO on every call.
type appendingISO struct{}

func (appendingISO) PreBoot(_ context.Context, r *sdk.PreBootRequest) error {
	data, err := os.ReadFile(r.CloudInitISO)
	if err != nil {
		return err
	}
	return sdk.AtomicWriteFile(r.CloudInitISO, append(data, "network: added\n"...), 0o644)
}

func TestPreBootRepeatableFailsSidecarAppendingOnEveryCall(t *testing.T) {
	r := runCheck(t, sdktest.StartLauncher(t, "demo", appendingISO{}), "PreBoot/Repeatable", contract(t, sdk.HookPreBoot))
	wantStatus(t, r, sdktest.Fail, "called again after a failed start", "the second call changed the artifacts again: noCloud.iso rewritten")
}

// careless breaks the three file rules, but only when it has an ISO: it
// rewrites the ISO in place at once and again 1.5 s later, after it
// answered, whatever its context says.
type careless struct{}

func (careless) PreBoot(_ context.Context, r *sdk.PreBootRequest) error {
	if r.CloudInitISO == "" {
		return nil
	}
	go func() {
		time.Sleep(1500 * time.Millisecond)
		_ = os.WriteFile(r.CloudInitISO, []byte("rewritten\n"), 0o644)
	}()
	return os.WriteFile(r.CloudInitISO, []byte("configured\n"), 0o644)
}

// isoReader reads the ISO it is given as cloud-init would, and refuses
// anything but a NoCloud ISO.
type isoReader struct {
	mu    sync.Mutex
	files map[string]string
}

func (i *isoReader) PreBoot(_ context.Context, r *sdk.PreBootRequest) error {
	if r.CloudInitISO == "" {
		return errors.New("no cloud-init ISO")
	}
	f, err := os.Open(r.CloudInitISO)
	if err != nil {
		return err
	}
	defer f.Close()
	img, err := iso9660.OpenImage(f)
	if err != nil {
		return err
	}
	if label, err := img.Label(); err != nil || strings.TrimSpace(label) != "cidata" {
		return fmt.Errorf("volume label %q (%w), want cidata", label, err)
	}
	root, err := img.RootDir()
	if err != nil {
		return err
	}
	children, err := root.GetChildren()
	if err != nil {
		return err
	}
	files := map[string]string{}
	for _, c := range children {
		b, err := io.ReadAll(c.Reader())
		if err != nil {
			return err
		}
		files[strings.ToLower(strings.Split(c.Name(), ";")[0])] = string(b)
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.files = files
	return nil
}

var preBootFileChecks = []string{"PreBoot/NoChangeAfterReturn", "PreBoot/ContextHonoured", "PreBoot/AtomicWrites", "PreBoot/Repeatable"}

// Without an ISO named, PreBoot is handed the stand-in NoCloud ISO, so that
// a sidecar that leaves things alone without an ISO does not pass by it.
func TestPreBootChecksHandAStandInNoCloudISOByDefault(t *testing.T) {
	c := sdktest.LauncherContract{Permitted: []string{sdk.HookPreBoot}}
	socket := sdktest.StartLauncher(t, "demo", careless{})
	wantStatus(t, runCheck(t, socket, "PreBoot/NoChangeAfterReturn", c), sdktest.Fail, "after PreBoot returned OK", "noCloud.iso rewritten")
	wantStatus(t, runCheck(t, socket, "PreBoot/ContextHonoured", c), sdktest.Fail, "honour the request context", "noCloud.iso rewritten")
	wantStatus(t, runCheck(t, socket, "PreBoot/AtomicWrites", c), sdktest.Fail, "rewritten in place (same inode, new content): noCloud.iso")

	reader := &isoReader{}
	socket = sdktest.StartLauncher(t, "demo", reader)
	wantStatus(t, runCheck(t, socket, "PreBoot/Repeatable", c), sdktest.Pass)
	reader.mu.Lock()
	defer reader.mu.Unlock()
	for name, want := range sdktest.StandInISOFiles {
		if reader.files[name] != want {
			t.Errorf("stand-in ISO: %s is %q, want %q (files %q)", name, reader.files[name], want, reader.files)
		}
	}

	good := sdktest.StartLauncher(t, "demo", wellBehaved{})
	for _, name := range preBootFileChecks {
		wantStatus(t, runCheck(t, good, name, c), sdktest.Pass)
	}
}

// A run that really gives PreBoot no ISO cannot tell: each file check that
// sees no change warns instead of passing.
func TestPreBootChecksWarnWithoutAnISO(t *testing.T) {
	c := sdktest.LauncherContract{Permitted: []string{sdk.HookPreBoot}, NoCloudInitISO: true, Settle: 500 * time.Millisecond}
	socket := sdktest.StartLauncher(t, "demo", careless{})
	for _, name := range preBootFileChecks {
		wantStatus(t, runCheck(t, socket, name, c), sdktest.Warn, "PreBoot was given no cloud-init ISO (NoCloudInitISO; in kvpctl, --no-iso)", "proves nothing")
	}
	// A change seen is still a failure.
	wantStatus(t, runCheck(t, sdktest.StartLauncher(t, "demo", backgroundDiskWriter{}), "PreBoot/NoChangeAfterReturn", c), sdktest.Fail, "disk.img created")
}

// backgroundDiskWriter answers at once and creates a disk image in the
// ephemeral disk directory 200 ms later.
type backgroundDiskWriter struct{}

func (backgroundDiskWriter) PreBoot(_ context.Context, r *sdk.PreBootRequest) error {
	go func() {
		time.Sleep(200 * time.Millisecond)
		_ = os.WriteFile(filepath.Join(r.EphemeralDiskDir, "disk.img"), []byte("disk"), 0o644)
	}()
	return nil
}

// rawMigration answers PreMigrationSource with a fixed response, as a
// server written without the SDK can.
type rawMigration struct {
	hooksv1alpha1.UnimplementedLauncherHookServiceServer
	resp *hooksv1alpha1.PreMigrationSourceResponse
}

func (s rawMigration) PreMigrationSource(context.Context, *hooksv1alpha1.PreMigrationSourceRequest) (*hooksv1alpha1.PreMigrationSourceResponse, error) {
	return s.resp, nil
}

func TestPreMigrationSourceResponseValidFailsInvalidResponses(t *testing.T) {
	withUnknown := func(raw []byte) *hooksv1alpha1.PreMigrationSourceResponse {
		params := &hooksv1alpha1.MigrationParams{}
		params.ProtoReflect().SetUnknown(raw)
		return &hooksv1alpha1.PreMigrationSourceResponse{Params: params}
	}
	for _, tc := range []struct {
		name string
		resp *hooksv1alpha1.PreMigrationSourceResponse
		seen string
	}{
		{
			"SetsAndClearsTheSameBit",
			&hooksv1alpha1.PreMigrationSourceResponse{SetFlags: uint64(sdk.MigratePostcopy | sdk.MigrateParallel), ClearFlags: uint64(sdk.MigratePostcopy)},
			"are in both set_flags and clear_flags",
		},
		{
			"UnknownParameter",
			withUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.BytesType), 0)),
			"params has field number 99, which the contract does not define",
		},
		{
			"BandwidthAsAPlainNumber",
			withUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 20, protowire.VarintType), 100)),
			"params.bandwidth has a value of the wrong type",
		},
		{
			"ParallelConnectionsAsAString",
			&hooksv1alpha1.PreMigrationSourceResponse{Params: &hooksv1alpha1.MigrationParams{ParallelConnections: func() *hooksv1alpha1.IntParam {
				p := &hooksv1alpha1.IntParam{}
				p.ProtoReflect().SetUnknown(protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "four"))
				return p
			}()}},
			"params[parallel.connections].value has a value of the wrong type",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			socket := serveRaw(t, func(g *grpc.Server) { hooksv1alpha1.RegisterLauncherHookServiceServer(g, rawMigration{resp: tc.resp}) })
			r := runCheck(t, socket, "PreMigrationSource/ResponseValid", contract(t, sdk.HookPreMigrationSource))
			wantStatus(t, r, sdktest.Fail, "holds only changes", tc.seen)
		})
	}
}

type noChanges struct{}

func (noChanges) PreMigrationSource(context.Context, *sdk.PreMigrationSourceRequest) (*sdk.MigrationChanges, error) {
	return nil, nil
}

// That the empty response changes nothing is the launcher's rule, tested
// in launcher-runtime; here a sidecar answering it passes the checks.
func TestPreMigrationSourceChecksPassASidecarChangingNothing(t *testing.T) {
	socket := sdktest.StartLauncher(t, "demo", noChanges{})
	c := contract(t, sdk.HookPreMigrationSource)
	wantStatus(t, runCheck(t, socket, "PreMigrationSource/ResponseValid", c), sdktest.Pass, "the response changes nothing")
	wantStatus(t, runCheck(t, socket, "PreMigrationSource/Idempotent", c), sdktest.Pass)
}

// postcopyToggle flips the post-copy flag on every call.
type postcopyToggle struct{}

func (postcopyToggle) PreMigrationSource(_ context.Context, r *sdk.PreMigrationSourceRequest) (*sdk.MigrationChanges, error) {
	if r.Flags.Has(sdk.MigratePostcopy) {
		return sdk.NewMigrationChanges().ClearFlags(sdk.MigratePostcopy), nil
	}
	return sdk.NewMigrationChanges().SetFlags(sdk.MigratePostcopy), nil
}

func TestPreMigrationSourceIdempotentFailsSidecarTogglingAFlag(t *testing.T) {
	r := runCheck(t, sdktest.StartLauncher(t, "demo", postcopyToggle{}), "PreMigrationSource/Idempotent", contract(t, sdk.HookPreMigrationSource))
	wantStatus(t, r, sdktest.Fail, "changed it again", "POSTCOPY")
}

// stubborn holds a lock while it works for 3 s and never looks at its
// context, so a call after one that gave up waits for it.
type stubborn struct{ mu sync.Mutex }

func (s *stubborn) work() {
	s.mu.Lock()
	defer s.mu.Unlock()
	time.Sleep(3 * time.Second)
}

func (s *stubborn) GuestDefinition(_ context.Context, r *sdk.GuestDefinitionRequest) (*libvirtxml.Domain, error) {
	s.work()
	return r.Domain, nil
}

func (s *stubborn) PreMigrationSource(context.Context, *sdk.PreMigrationSourceRequest) (*sdk.MigrationChanges, error) {
	s.work()
	return nil, nil
}

func (s *stubborn) ExecuteNodeHook(context.Context, *sdk.NodeHookRequest) error {
	s.work()
	return nil
}

func TestContextHonouredFailsHandlerWorkingPastItsDeadline(t *testing.T) {
	for _, hook := range []string{sdk.HookGuestDefinition, sdk.HookPreMigrationSource} {
		t.Run(hook, func(t *testing.T) {
			t.Parallel()
			r := runCheck(t, sdktest.StartLauncher(t, "demo", &stubborn{}), hook+"/ContextHonoured", contract(t, hook))
			wantStatus(t, r, sdktest.Fail, "honour the request context", hook+" after a call that ended at its 300ms deadline took", "kept working after its caller gave up")
		})
	}
	t.Run("Node", func(t *testing.T) {
		t.Parallel()
		r := runNodeCheck(t, sdktest.StartNode(t, &stubborn{}), "Node/PreVMStart/ContextHonoured", sdktest.NodeContract{HookPoints: []sdk.NodeHookPoint{sdk.NodeHookPreVMStart}})
		wantStatus(t, r, sdktest.Fail, "node hooks honour the request context", "ExecuteNodeHook(PreVMStart) after a call that ended at its 300ms deadline took")
	})
}

type flappingNode struct {
	mu    sync.Mutex
	calls int
}

func (f *flappingNode) ExecuteNodeHook(context.Context, *sdk.NodeHookRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.calls > 1 {
		return errors.New("already done")
	}
	return nil
}

func TestNodeRepeatableFailsServerRefusingARepeatedEvent(t *testing.T) {
	r := runNodeCheck(t, sdktest.StartNode(t, &flappingNode{}), "Node/OnVMStop/Repeatable", sdktest.NodeContract{HookPoints: []sdk.NodeHookPoint{sdk.NodeHookOnVMStop}})
	wantStatus(t, r, sdktest.Fail, "may fire several times", "called 2 times for one event answered [OK Unknown]")
}

func TestNotPermittedRPCIsAWarningAndMissingPermittedRPCAFailure(t *testing.T) {
	socket := sdktest.StartLauncher(t, "demo", wellBehaved{})
	wantStatus(t, runCheck(t, socket, "RPCs/OnlyPermitted", contract(t, sdk.HookGuestDefinition)), sdktest.Warn, "PreBoot (answered OK)", "PreMigrationSource (answered OK)")

	only := sdktest.StartLauncher(t, "demo", appendingWatchdog{})
	wantStatus(t, runCheck(t, only, "RPCs/PermittedImplemented", contract(t, sdk.HookGuestDefinition, sdk.HookPreBoot)), sdktest.Fail,
		"implements the RPC of every hook point", "PreBoot is permitted but answered Unimplemented")
	wantStatus(t, runCheck(t, only, "RPCs/OnlyPermitted", contract(t, sdk.HookGuestDefinition)), sdktest.Pass)

	// A node hook point in a sidecar's permittedHooks is a Plugin the
	// launcher would never call for it.
	wantStatus(t, runCheck(t, socket, "RPCs/PermittedImplemented", contract(t, sdk.HookGuestDefinition, string(sdk.NodeHookPostVMStart))), sdktest.Fail,
		"implements the RPC of every hook point", `permittedHooks lists "PostVMStart", which is not a launcher hook point`)
}
