// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"libvirt.org/go/libvirtxml"

	"github.com/kubevirt-plugins/framework/api/plugin/v1alpha1/examples"
	"github.com/kubevirt-plugins/framework/protos/sdk"
)

const (
	testVMI     = "../../testdata/vmi.yaml"
	testDomain  = "../../testdata/domain.xml"
	testPlugins = "../../testdata/plugins"
	testParams  = "../../testdata/params.json"
)

// kvpctl runs the command in-process and returns its exit status and output.
func kvpctl(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// socketRoot is a short directory standing in for /var/run/kubevirt-plugin.
func socketRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kvp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// serveSDK serves handler with the plugin-side SDK, as a real sidecar does,
// until the test ends or stop is called. stop returns once the server has
// stopped gracefully: every call it received has returned.
func serveSDK(t *testing.T, root, plugin string, handler any) (stop func()) {
	t.Helper()
	srv, err := sdk.NewLauncherServer(plugin, handler, sdk.WithSocketRoot(root))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ctx)
	}()
	stop = func() {
		cancel()
		<-done
	}
	t.Cleanup(stop)
	return stop
}

func sidecarPlugin(t *testing.T, name string, points ...string) string {
	t.Helper()
	var sb strings.Builder
	sb.WriteString("apiVersion: plugin.kubevirt.io/v1alpha1\nkind: Plugin\nmetadata:\n  name: " + name + "\nspec:\n  launcherHooks:\n  - sidecar:\n")
	sb.WriteString("      socketPath: /var/run/kubevirt-plugin/" + name + "/hook.sock\n      permittedHooks:\n")
	for _, p := range points {
		sb.WriteString("      - " + p + "\n")
	}
	return writeFile(t, name+".yaml", sb.String())
}

func TestUsageErrorsExit2(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"NoArguments", nil, "usage:"},
		{"UnknownCommand", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"UnknownFlag", []string{"condition", "--nope"}, "flag provided but not defined"},
		{"MissingVMI", []string{"guest-definition", "--plugins", testPlugins, "--domain", testDomain}, "--vmi is required"},
		{"BadContext", []string{"guest-definition", "--plugins", testPlugins, "--vmi", testVMI, "--domain", testDomain, "--context", "Source"}, "--context must be Boot or MigrationTarget"},
		{"BadFlagsNumber", []string{"pre-migration-source", "--plugins", testPlugins, "--vmi", testVMI, "--flags", "lots"}, "--flags"},
		{"StrayArgument", []string{"condition", "--expression", "true", "--vmi", testVMI, "extra"}, `unexpected argument "extra"`},
		{"ValidateWithoutFiles", []string{"validate"}, "name at least one file"},
		{"BadSocketWait", []string{"guest-definition", "--plugins", testPlugins, "--vmi", testVMI, "--domain", testDomain, "--socket-wait", "soon"}, "invalid value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := kvpctl(t, tc.args...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 mentioning %q", code, stderr, tc.want)
			}
		})
	}
}

func TestValidateAcceptsGuideExamples(t *testing.T) {
	cases, err := examples.Valid()
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, c := range cases {
		files = append(files, writeFile(t, c.Name+".yaml", string(c.YAML)))
	}
	code, stdout, stderr := kvpctl(t, append([]string{"validate"}, files...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "plugin(s) valid") {
		t.Errorf("stdout %q", stdout)
	}
}

func TestValidateNamesTheFieldOfEachInvalidExample(t *testing.T) {
	cases, err := examples.Invalid()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			code, _, stderr := kvpctl(t, "validate", writeFile(t, c.Name+".yaml", string(c.YAML)))
			if code != exitError {
				t.Fatalf("exit %d, want 1", code)
			}
			if !strings.Contains(stderr, `plugin "`) || !strings.Contains(stderr, ": "+c.Field) || !strings.Contains(stderr, c.Message) {
				t.Errorf("stderr does not name field %q with %q:\n%s", c.Field, c.Message, stderr)
			}
		})
	}
}

func TestValidateListsEveryProblem(t *testing.T) {
	file := writeFile(t, "plugins.yaml", `apiVersion: plugin.kubevirt.io/v1alpha1
kind: Plugin
metadata:
  name: x
spec:
  condition: 'vmi.Labels'
  launcherHooks:
  - cel:
      hookPoint: GuestDefinition
      expression: 'Domain{CPU: DomainCPU{Mode: 3}}'
  - sidecar:
      socketPath: /var/run/kubevirt-plugin/y/hook.sock
      permittedHooks: [PreBoot]
---
apiVersion: plugin.kubevirt.io/v1alpha1
kind: Plugin
metadata:
  name: z
spec:
  launcherHooks:
  - cel:
      hookPoint: GuestDefinition
      expression: 'Domain{Name: vmi.NoSuchField}'
    unknownField: 1
`)
	code, _, stderr := kvpctl(t, "validate", file)
	if code != exitError {
		t.Fatalf("exit %d, want 1", code)
	}
	for _, want := range []string{
		`plugin "x": spec.condition: Invalid value`,
		`plugin "x": spec.launcherHooks[0].cel.expression: Invalid value`,
		`plugin "x": spec.launcherHooks[1].sidecar.socketPath: Invalid value`,
		`(document 2): `, `unknown field "unknownField"`,
		"4 problem(s)",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

func TestValidateReportsCELTypeErrorWithoutUnknownFields(t *testing.T) {
	file := writeFile(t, "p.yaml", `apiVersion: plugin.kubevirt.io/v1alpha1
kind: Plugin
metadata:
  name: z
spec:
  launcherHooks:
  - cel:
      hookPoint: GuestDefinition
      expression: 'Domain{Name: vmi.NoSuchField}'
`)
	code, _, stderr := kvpctl(t, "validate", file)
	if code != exitError || !strings.Contains(stderr, `plugin "z": spec.launcherHooks[0].cel.expression: Invalid value: type error:`) || !strings.Contains(stderr, `undefined field 'NoSuchField'`) {
		t.Errorf("exit %d:\n%s", code, stderr)
	}
}

func TestGuestDefinitionPrintsResultingDomain(t *testing.T) {
	code, stdout, stderr := kvpctl(t, "guest-definition", "--plugins", testPlugins, "--vmi", testVMI, "--domain", testDomain)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	d := &libvirtxml.Domain{}
	if err := d.Unmarshal(stdout); err != nil {
		t.Fatalf("stdout is not a domain: %v", err)
	}
	if d.CPU.Mode != "host-passthrough" || d.CPU.Topology.Cores != 2 {
		t.Errorf("CPU %+v, want host-passthrough with the topology kept", d.CPU)
	}
	if d.Title != "owner team-a" {
		t.Errorf("title %q", d.Title)
	}
	if len(d.Devices.Disks) != 5 || len(d.Devices.Interfaces) != 2 {
		t.Errorf("devices lost: %d disks, %d interfaces", len(d.Devices.Disks), len(d.Devices.Interfaces))
	}
	if !strings.Contains(stderr, "skipping v1 ConfigMap") {
		t.Errorf("no note about the skipped document: %q", stderr)
	}
}

func TestGuestDefinitionDiff(t *testing.T) {
	code, stdout, stderr := kvpctl(t, "guest-definition", "--plugins", testPlugins, "--vmi", testVMI, "--domain", testDomain, "--diff")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"--- " + testDomain + "\n+++ " + testDomain + " (after GuestDefinition)\n@@ ",
		`-  <cpu mode="host-model">`,
		`+  <cpu mode="host-passthrough">`,
		"+  <title>owner team-a</title>",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("diff lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "-    <disk") {
		t.Errorf("the diff shows unchanged devices:\n%s", stdout)
	}
}

// titleSidecar is a GuestDefinition sidecar that sets the title.
type titleSidecar struct{}

func (titleSidecar) GuestDefinition(_ context.Context, req *sdk.GuestDefinitionRequest) (*libvirtxml.Domain, error) {
	d := req.Domain
	d.Title = "set by a sidecar"
	return d, nil
}

// TestGuestDefinitionExplainNamesWhoChangedWhatAndWhoOverwroteWhom: over
// Plugin files given with several --plugins, every changed part of the
// domain with the hook that changed it last; a part changed by two plugins
// is marked, naming both, sidecars included.
func TestGuestDefinitionExplainNamesWhoChangedWhatAndWhoOverwroteWhom(t *testing.T) {
	root := socketRoot(t)
	serveSDK(t, root, "z-title", titleSidecar{})
	override := writeFile(t, "override.yaml", `apiVersion: plugin.kubevirt.io/v1alpha1
kind: Plugin
metadata:
  name: m-override
spec:
  launcherHooks:
  - cel:
      hookPoint: GuestDefinition
      expression: 'Domain{CPU: DomainCPU{Mode: "host-model"}, OnCrash: "coredump-restart"}'
`)
	code, stdout, stderr := kvpctl(t, "guest-definition", "--plugins", testPlugins, "--plugins", override,
		"--plugins", sidecarPlugin(t, "z-title", "GuestDefinition"),
		"--vmi", testVMI, "--domain", testDomain, "--socket-root", root, "--explain")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	t.Log("\n" + stdout)
	lines := strings.Split(stdout, "\n")
	want := []string{
		`^PATH +CHANGED BY$`,
		`^OnCrash +plugin "m-override" launcher hook #0 \(cel\)$`,
		`^CPU.Mode +plugin "m-override" launcher hook #0 \(cel\), overwriting plugin "cpu-tuning" launcher hook #0 \(cel\)$`,
		`^Title +plugin "z-title" launcher hook #0 \(sidecar\), overwriting plugin "audit-title" launcher hook #0 \(cel\)$`,
		`^OVERWRITTEN`,
		`^  plugin "m-override" launcher hook #0 \(cel\) overwrote CPU.Mode, written by plugin "cpu-tuning" launcher hook #0 \(cel\)$`,
		`^  plugin "z-title" launcher hook #0 \(sidecar\) overwrote Title, written by plugin "audit-title" launcher hook #0 \(cel\)$`,
	}
	for _, w := range want {
		re := regexp.MustCompile(w)
		if !slices.ContainsFunc(lines, re.MatchString) {
			t.Errorf("no line matches %s", w)
		}
	}
	if n := len(lines); n != 9 {
		t.Errorf("%d lines, want a header, three changes, a blank line, the OVERWRITTEN header, two overlaps and the final newline", n)
	}

	// One plugin: nothing overwritten.
	code, stdout, stderr = kvpctl(t, "guest-definition", "--plugins", override, "--vmi", testVMI, "--domain", testDomain, "--explain")
	if code != exitOK || strings.Contains(stdout, "OVERWRITTEN") || !strings.Contains(stdout, "no part of the domain was changed by more than one plugin") {
		t.Errorf("one plugin: exit %d\n%s%s", code, stdout, stderr)
	}
}

// stampSidecar is a GuestDefinition sidecar written with the SDK.
type stampSidecar struct{ seen chan sdk.InvocationContext }

func (s stampSidecar) GuestDefinition(_ context.Context, req *sdk.GuestDefinitionRequest) (*libvirtxml.Domain, error) {
	s.seen <- req.InvocationContext
	d := req.Domain
	d.Devices.Watchdogs = nil
	d.Description = "stamped by " + req.VMI.Name
	return d, nil
}

func TestGuestDefinitionCallsSidecarBelowSocketRoot(t *testing.T) {
	root := socketRoot(t)
	seen := make(chan sdk.InvocationContext, 2)
	serveSDK(t, root, "stamp", stampSidecar{seen: seen})
	plugins := sidecarPlugin(t, "stamp", "GuestDefinition")
	code, stdout, stderr := kvpctl(t, "guest-definition", "--plugins", plugins, "--vmi", testVMI, "--domain", testDomain, "--socket-root", root, "--diff")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "+  <description>stamped by web-01</description>") || !strings.Contains(stdout, `-    <watchdog model="i6300esb"`) {
		t.Errorf("diff lacks the sidecar's changes:\n%s", stdout)
	}
	if got := <-seen; got != "Boot" {
		t.Errorf("invocation context %q", got)
	}

	code, stdout, stderr = kvpctl(t, "guest-definition", "--plugins", plugins, "--vmi", testVMI, "--domain", testDomain, "--socket-root", root, "--context", "MigrationTarget", "--diff")
	if code != exitOK || stdout != "" {
		t.Errorf("MigrationTarget: exit %d, diff %q (%s); want no change", code, stdout, stderr)
	}
	if got := <-seen; got != "MigrationTarget" {
		t.Errorf("invocation context %q", got)
	}
}

func TestGuestDefinitionSocketNeverAppears(t *testing.T) {
	plugins := sidecarPlugin(t, "absent", "GuestDefinition")
	code, _, stderr := kvpctl(t, "guest-definition", "--plugins", plugins, "--vmi", testVMI, "--domain", testDomain,
		"--socket-root", socketRoot(t), "--socket-wait", "100ms")
	if code != exitError || !strings.Contains(stderr, `plugin "absent" launcher hook #0 (sidecar) at GuestDefinition`) || !strings.Contains(stderr, "100ms socket wait budget") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// tuner is a PreMigrationSource sidecar written with the SDK.
type tuner struct{}

func (tuner) PreMigrationSource(context.Context, *sdk.PreMigrationSourceRequest) (*sdk.MigrationChanges, error) {
	return sdk.NewMigrationChanges().
		SetFlags(1 << 17).
		SetParallelConnections(4).
		Remove("listen_address"), nil
}

func TestPreMigrationSourcePrintsFlagsAndParams(t *testing.T) {
	root := socketRoot(t)
	serveSDK(t, root, "tuner", tuner{})
	code, stdout, stderr := kvpctl(t, "pre-migration-source", "--plugins", sidecarPlugin(t, "tuner", "PreMigrationSource"),
		"--vmi", testVMI, "--flags", "0x3", "--params", testParams, "--socket-root", root)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct {
		Flags  uint64         `json:"flags"`
		Params map[string]any `json:"params"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("stdout is not the JSON result: %v\n%s", err, stdout)
	}
	if got.Flags != 3|1<<17 {
		t.Errorf("flags %#x", got.Flags)
	}
	want := map[string]any{
		"migrate_uri":          "tcp://10.0.0.2:49152",
		"bandwidth":            float64(0),
		"migrate_disks":        []any{"vdb"},
		"parallel.connections": float64(4),
	}
	if len(got.Params) != len(want) {
		t.Errorf("params %v, want %v", got.Params, want)
	}
	for k, v := range want {
		if gv, _ := json.Marshal(got.Params[k]); string(gv) != mustJSON(t, v) {
			t.Errorf("%s = %s, want %s", k, gv, mustJSON(t, v))
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPreMigrationSourceRejectsUnknownParam(t *testing.T) {
	params := writeFile(t, "params.yaml", "parallel_connections: 2\n")
	code, _, stderr := kvpctl(t, "pre-migration-source", "--plugins", testPlugins, "--vmi", testVMI, "--flags", "1", "--params", params)
	if code != exitError || !strings.Contains(stderr, `unknown migration parameter "parallel_connections"`) {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

func TestConditionPrintsTrueOrFalse(t *testing.T) {
	for _, tc := range []struct {
		expr, want string
	}{
		{`"example.com/tuning" in vmi.Labels`, "true\n"},
		{`vmi.Labels["example.com/tuning"] == "memory"`, "false\n"},
		{`vmi.Spec.Domain.CPU.Cores > 1`, "true\n"},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			code, stdout, stderr := kvpctl(t, "condition", "--expression", tc.expr, "--vmi", testVMI)
			if code != exitOK || stdout != tc.want {
				t.Errorf("exit %d, stdout %q, stderr %q; want %q", code, stdout, stderr, tc.want)
			}
		})
	}
}

func TestConditionErrorsExit1(t *testing.T) {
	for _, tc := range []struct {
		name, expr, want string
	}{
		{"NotBool", `vmi.Name`, "must evaluate to bool"},
		{"EvaluationError", `vmi.Labels["absent"] == "x"`, "absent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := kvpctl(t, "condition", "--expression", tc.expr, "--vmi", testVMI)
			if code != exitError || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q", code, stderr)
			}
		})
	}
}

func TestVMIFromJSONAndFromVirtualMachine(t *testing.T) {
	vmiJSON := writeFile(t, "vmi.json", `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"j","labels":{"a":"b"}}}`)
	vm := writeFile(t, "vm.yaml", `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: from-vm
spec:
  template:
    metadata:
      labels:
        tier: db
    spec:
      domain:
        devices: {}
`)
	for _, tc := range []struct{ file, expr string }{
		{vmiJSON, `vmi.Labels["a"] == "b" && vmi.Name == "j"`},
		{vm, `vmi.Labels["tier"] == "db" && vmi.Name == "from-vm"`},
	} {
		code, stdout, stderr := kvpctl(t, "condition", "--expression", tc.expr, "--vmi", tc.file)
		if code != exitOK || stdout != "true\n" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", tc.file, code, stdout, stderr)
		}
	}
}

func TestSharedFixturesRunThroughGuestDefinition(t *testing.T) {
	const fixtures = "../../../../shared/fixtures"
	domain, vmi := filepath.Join(fixtures, "domain_x86_64.xml"), filepath.Join(fixtures, "vmi-fedora.yaml")
	for _, f := range []string{domain, vmi} {
		if _, err := os.Stat(f); err != nil {
			t.Skipf("shared fixtures not available (%v); they live in ../shared/fixtures next to the repository", err)
		}
	}
	code, stdout, stderr := kvpctl(t, "guest-definition", "--plugins", testPlugins, "--vmi", vmi, "--domain", domain, "--diff")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// The fedora VMI has no tuning label: only the title changes.
	if !strings.Contains(stdout, "+  <title>owner unknown</title>") || strings.Contains(stdout, "host-passthrough") {
		t.Errorf("unexpected diff:\n%s", stdout)
	}
}

func TestBuildsWithoutCgoAndWithoutLibvirt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool: %v", err)
	}
	cmd := exec.Command(goTool, "list", "-deps", ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for dep := range strings.FieldsSeq(string(out)) {
		if dep == "libvirt.org/go/libvirt" || strings.HasSuffix(dep, "/launcher-runtime/domainrun") || dep == "runtime/cgo" {
			t.Errorf("kvpctl depends on %s", dep)
		}
	}
	build := exec.Command(goTool, "build", "-o", filepath.Join(t.TempDir(), "kvpctl"), ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Errorf("CGO_ENABLED=0 build failed: %v\n%s", err, out)
	}
}

func TestPreMigrationSourceReadsLargeNumbersExactly(t *testing.T) {
	params := writeFile(t, "params.yaml", "bandwidth: 18446744073709551615\nmigrate_uri: tcp://peer\n")
	code, stdout, stderr := kvpctl(t, "pre-migration-source", "--plugins", testPlugins, "--vmi", testVMI, "--flags", "1", "--params", params)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, `"bandwidth": 18446744073709551615`) {
		t.Errorf("the largest uint64 bandwidth did not come through exactly:\n%s", stdout)
	}
}
