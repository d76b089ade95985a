// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
	"github.com/kubevirt-plugins/framework/protos/sdk"
	"github.com/kubevirt-plugins/framework/protos/sdk/sdktest"
)

const conformanceSynopsis = "conformance --plugin FILE --socket PATH [--hooks launcher|node] [--vmi FILE] [--domain FILE] [--iso FILE | --no-iso] [--flags N] [--params FILE] [--timeout D] [--short-deadline D] [--settle D]  check a running hook server against the contract"

// conformanceFlags are the flags of `kvpctl conformance`.
type conformanceFlags struct {
	plugin, socket, hooks     string
	vmi, domain, iso, params  string
	flags                     string
	noISO                     bool
	timeout, settle, deadline time.Duration
}

// runConformance runs the sdktest checks against a hook server that is
// already running: the hook points come from the Plugin, one line per
// check goes to stdout, then a summary. It fails when a check fails. It
// writes nothing but the temporary directories the PreBoot checks create
// and remove (each holding a copy of --iso or the stand-in NoCloud ISO).
func runConformance(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f conformanceFlags
	fs := flag.NewFlagSet("conformance", flag.ContinueOnError)
	fs.StringVar(&f.plugin, "plugin", "", "file holding the hook server's Plugin")
	fs.StringVar(&f.socket, "socket", "", "the running server's Unix socket")
	fs.StringVar(&f.hooks, "hooks", "", "launcher or node: which of the Plugin's hooks the socket serves (default: the only kind the Plugin has)")
	fs.StringVar(&f.vmi, "vmi", "", "VirtualMachineInstance (or VirtualMachine) sent in every request (default: default/testvmi without labels)")
	fs.StringVar(&f.domain, "domain", "", "domain XML sent to GuestDefinition (default: a domain as KubeVirt generates it)")
	fs.StringVar(&f.iso, "iso", "", "cloud-init ISO whose copy PreBoot is given (default: a stand-in NoCloud ISO)")
	fs.BoolVar(&f.noISO, "no-iso", false, "give PreBoot no cloud-init ISO, as for a VMI without a cloud-init volume (the PreBoot file checks then warn)")
	fs.StringVar(&f.flags, "flags", "", "VIR_MIGRATE_* flags sent to PreMigrationSource (default: a live migration's)")
	fs.StringVar(&f.params, "params", "", "migration parameters (YAML or JSON, libvirt names) sent to PreMigrationSource")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Second, "bound of each call")
	fs.DurationVar(&f.deadline, "short-deadline", 300*time.Millisecond, "deadline of the calls that check the request context is honoured")
	fs.DurationVar(&f.settle, "settle", 2*time.Second, "how long boot artifacts are watched after a PreBoot call")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if err := required(map[string]string{"plugin": f.plugin, "socket": f.socket}); err != nil {
		return err
	}
	if f.iso != "" && f.noISO {
		return usagef("--iso and --no-iso exclude each other")
	}
	if f.hooks != "" && f.hooks != "launcher" && f.hooks != "node" {
		return usagef("--hooks must be launcher or node, not %q", f.hooks)
	}
	plugin, err := onePlugin(f.plugin, stderr)
	if err != nil {
		return err
	}
	if err := isSocket(f.socket); err != nil {
		return err
	}
	vmi := sdktest.VMIJSON("default", "testvmi", nil, nil)
	if f.vmi != "" {
		v, err := loadVMI(f.vmi)
		if err != nil {
			return err
		}
		if vmi, err = json.Marshal(v); err != nil {
			return fmt.Errorf("%s: %w", f.vmi, err)
		}
	}
	kind, err := hookKind(plugin, f.hooks, f.socket)
	if err != nil {
		return err
	}
	conn, err := sdktest.Dial(f.socket)
	if err != nil {
		return fmt.Errorf("socket %s: %w", f.socket, err)
	}
	defer conn.Close()

	var checks []sdktest.Check
	if kind == "node" {
		c := sdktest.NodeContract{VMI: vmi, CallTimeout: f.timeout, ShortDeadline: f.deadline}
		for _, hp := range nodeHookPoints(plugin, f.socket) {
			c.HookPoints = append(c.HookPoints, sdk.NodeHookPoint(hp))
		}
		if err := speaksNode(ctx, conn, f.socket, c); err != nil {
			return err
		}
		checks = sdktest.NodeChecks(c)
	} else {
		c, err := f.launcherContract(plugin, vmi)
		if err != nil {
			return err
		}
		if err := speaksLauncher(ctx, conn, f.socket); err != nil {
			return err
		}
		checks = sdktest.LauncherChecks(c)
	}
	fmt.Fprintf(stdout, "plugin %s, %s hooks, socket %s\n", plugin.Name, kind, f.socket)
	summary := sdktest.WriteReport(stdout, sdktest.RunChecks(ctx, conn, checks))
	if summary.Failed > 0 {
		return fmt.Errorf("plugin %s: %d of %d checks failed", plugin.Name, summary.Failed, summary.Passed+summary.Failed+summary.Warned)
	}
	return nil
}

func (f conformanceFlags) launcherContract(plugin *pluginv1alpha1.Plugin, vmi []byte) (sdktest.LauncherContract, error) {
	c := sdktest.LauncherContract{VMI: vmi, CallTimeout: f.timeout, ShortDeadline: f.deadline, Settle: f.settle, NoCloudInitISO: f.noISO}
	for _, hp := range launcherHookPoints(plugin, f.socket) {
		c.Permitted = append(c.Permitted, string(hp))
	}
	if f.domain != "" {
		if _, err := loadDomain(f.domain); err != nil {
			return c, err
		}
		data, err := os.ReadFile(f.domain)
		if err != nil {
			return c, err
		}
		c.DomainXML = data
	}
	if f.iso != "" {
		if _, err := os.Stat(f.iso); err != nil {
			return c, err
		}
		c.Artifacts = &hooksv1alpha1.BootArtifacts{CloudInitIso: f.iso}
	}
	if f.flags != "" {
		n, err := strconv.ParseUint(f.flags, 0, 64)
		if err != nil {
			return c, usagef("--flags: %v", err)
		}
		c.Flags = n
	}
	if f.params != "" {
		p, err := loadParams(f.params)
		if err != nil {
			return c, err
		}
		c.Params = p
	}
	if c.Params == nil && c.Flags != 0 {
		c.Params = &hooksv1alpha1.MigrationParams{}
	}
	if c.Params != nil && c.Flags == 0 {
		c.Flags = uint64(sdktest.DefaultMigrationFlags)
	}
	return c, nil
}

// onePlugin reads the file holding exactly one Plugin.
func onePlugin(file string, notes io.Writer) (*pluginv1alpha1.Plugin, error) {
	plugins, err := loadPlugins([]string{file}, notes)
	if err != nil {
		return nil, err
	}
	if len(plugins) != 1 {
		return nil, fmt.Errorf("%s: holds %d Plugins, want one", file, len(plugins))
	}
	return &plugins[0], nil
}

// isSocket refuses a path that does not exist or is not a Unix socket.
func isSocket(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("socket %s: %w", path, errors.Unwrap(err))
	}
	if info.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("socket %s: is not a Unix socket (%s)", path, info.Mode().Type())
	}
	return nil
}

// hookKind decides whether the socket serves the Plugin's launcher hooks
// (a sidecar) or its node hooks.
func hookKind(p *pluginv1alpha1.Plugin, flagValue, socket string) (string, error) {
	sidecars := 0
	for _, h := range p.Spec.LauncherHooks {
		if h.Sidecar != nil {
			sidecars++
		}
	}
	hasSidecar, hasNode := sidecars > 0, len(p.Spec.NodeHooks) > 0
	kind, err := pickKind(p, flagValue, hasSidecar, hasNode)
	if err != nil {
		return "", err
	}
	// A Plugin with several servers of the kind: the socket must name one.
	switch {
	case kind == "launcher" && launcherHookPoints(p, socket) == nil:
		return "", fmt.Errorf("plugin %s: none of its %d sidecars has a socketPath ending like %s", p.Name, sidecars, socket)
	case kind == "node" && nodeHookPoints(p, socket) == nil:
		return "", fmt.Errorf("plugin %s: none of its %d node hook servers has a socket ending like %s", p.Name, len(p.Spec.NodeHooks), socket)
	}
	return kind, nil
}

func pickKind(p *pluginv1alpha1.Plugin, flagValue string, hasSidecar, hasNode bool) (string, error) {
	switch {
	case flagValue == "launcher" && !hasSidecar:
		return "", fmt.Errorf("plugin %s: has no sidecar launcher hook", p.Name)
	case flagValue == "node" && !hasNode:
		return "", fmt.Errorf("plugin %s: has no node hooks", p.Name)
	case flagValue != "":
		return flagValue, nil
	case hasSidecar && hasNode:
		return "", usagef("plugin %s has sidecar and node hooks: say which with --hooks launcher|node", p.Name)
	case hasNode:
		return "node", nil
	case hasSidecar:
		return "launcher", nil
	}
	return "", fmt.Errorf("plugin %s: has neither a sidecar launcher hook nor node hooks: nothing to check", p.Name)
}

// sameSocket reports whether the Plugin's socket path and the socket given
// name the same socket: equal, or ending in the same directory and file
// (the Plugin names the path inside the Pod or on the node).
func sameSocket(pluginPath, socket string) bool {
	tail := func(p string) string { return filepath.Join(filepath.Base(filepath.Dir(p)), filepath.Base(p)) }
	return pluginPath == socket || tail(pluginPath) == tail(socket)
}

// launcherHookPoints returns the permitted hooks of the Plugin's sidecar at
// socket, or of its only sidecar; nil when no sidecar is the one.
func launcherHookPoints(p *pluginv1alpha1.Plugin, socket string) []pluginv1alpha1.LauncherHookPoint {
	var sidecars []*pluginv1alpha1.SidecarHook
	for _, h := range p.Spec.LauncherHooks {
		if h.Sidecar != nil {
			sidecars = append(sidecars, h.Sidecar)
		}
	}
	for _, s := range sidecars {
		if sameSocket(s.SocketPath, socket) {
			return s.PermittedHooks
		}
	}
	if len(sidecars) == 1 {
		return sidecars[0].PermittedHooks
	}
	return nil
}

// nodeHookPoints returns the permitted hooks of the Plugin's node hook
// server at socket, or of its only one; nil when no server is the one.
func nodeHookPoints(p *pluginv1alpha1.Plugin, socket string) []pluginv1alpha1.NodeHookPoint {
	for _, h := range p.Spec.NodeHooks {
		if sameSocket(h.Socket, socket) {
			return h.PermittedHooks
		}
	}
	if len(p.Spec.NodeHooks) == 1 {
		return p.Spec.NodeHooks[0].PermittedHooks
	}
	return nil
}

// speaksLauncher makes sure the socket serves LauncherHookService before
// any check runs, so that a wrong socket is one line, not a page of FAILs.
func speaksLauncher(ctx context.Context, conn grpc.ClientConnInterface, socket string) error {
	cl := hooksv1alpha1.NewLauncherHookServiceClient(conn)
	probes := []func(context.Context) error{
		func(ctx context.Context) error {
			_, err := cl.GuestDefinition(ctx, &hooksv1alpha1.GuestDefinitionRequest{})
			return err
		},
		func(ctx context.Context) error {
			_, err := cl.PreBoot(ctx, &hooksv1alpha1.PreBootRequest{})
			return err
		},
		func(ctx context.Context) error {
			_, err := cl.PreMigrationSource(ctx, &hooksv1alpha1.PreMigrationSourceRequest{})
			return err
		},
	}
	for _, probe := range probes {
		if err := speaks(ctx, socket, probe); !errors.Is(err, errUnimplemented) {
			return err
		}
	}
	return fmt.Errorf("socket %s: does not serve kubevirt.hooks.plugins.v1alpha1.LauncherHookService (every RPC answers Unimplemented)", socket)
}

func speaksNode(ctx context.Context, conn grpc.ClientConnInterface, socket string, c sdktest.NodeContract) error {
	cl := hooksv1alpha1.NewNodeHookServiceClient(conn)
	err := speaks(ctx, socket, func(ctx context.Context) error {
		_, err := cl.ExecuteNodeHook(ctx, &hooksv1alpha1.ExecuteNodeHookRequest{Vmi: c.VMI, NodeContext: &hooksv1alpha1.NodeContext{NodeName: "node01"}})
		return err
	})
	if errors.Is(err, errUnimplemented) {
		return fmt.Errorf("socket %s: does not serve kubevirt.hooks.plugins.v1alpha1.NodeHookService (ExecuteNodeHook answers Unimplemented)", socket)
	}
	return err
}

var errUnimplemented = errors.New("unimplemented")

// speaks runs one probe call: an answer of any code but Unavailable means
// the socket speaks gRPC.
func speaks(ctx context.Context, socket string, probe func(context.Context) error) error {
	callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := probe(callCtx)
	switch status.Code(err) {
	case codes.Unimplemented:
		return errUnimplemented
	case codes.Unavailable, codes.DeadlineExceeded:
		return fmt.Errorf("socket %s: does not answer gRPC: %s", socket, status.Convert(err).Message())
	}
	return nil
}
