// SPDX-License-Identifier: Apache-2.0

package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"libvirt.org/go/libvirt"

	"github.com/kubevirt-plugins/framework/tests/framework/gobuild"
	"github.com/kubevirt-plugins/framework/tests/framework/poll"
	"github.com/kubevirt-plugins/framework/tests/framework/repo"
)

var kvpctl = &gobuild.Binary{Module: "launcher-runtime", Pkg: "./cmd/kvpctl"}

// pythonSample is the Python sample's directory in the repository.
const pythonSample = "python-guestdefinition"

// sample says how to start one sample hook server and what VMI opts it in,
// so that the checks see it do its work rather than pass it by.
type sample struct {
	name string
	// args are the server's flags; {root} is replaced by the socket root.
	args []string
	// socket is the socket path below the socket root.
	socket string
	env    []string
	vmi    string
	// iso: give PreBoot a NoCloud ISO built by genisoimage.
	iso bool
}

const networkStatus = `[{"name":"kindnet","interface":"eth0","ips":["10.244.0.7"],"mac":"0a:58:0a:f4:00:07","default":true,"dns":{}},` +
	`{"name":"ns1/red","interface":"pod7b1a2c","ips":["192.168.10.5"],"mac":"02:ab:00:00:00:01","dns":{"nameservers":["192.168.10.1"]},"gateway":["192.168.10.1"]}]`

var samples = []sample{
	{
		name: "smbios-watchdog", args: []string{"--plugin-name=smbios-watchdog", "--socket-root={root}"}, socket: "smbios-watchdog/hook.sock",
		vmi: vmi("smbios-watchdog", `    smbios.example.com/manufacturer: Example
    watchdog.example.com/action: reset
`, ""),
	},
	{
		name: "cloudinit-network", args: []string{"--plugin-name=cloudinit-network", "--socket-root={root}"}, socket: "cloudinit-network/hook.sock",
		env: []string{"NETWORK_STATUS=" + networkStatus}, iso: true,
		vmi: vmi("cloudinit-network", "", `  domain:
    devices:
      interfaces:
      - name: default
      - name: red
  networks:
  - name: default
    pod: {}
  - name: red
    multus:
      networkName: red
`),
	},
	{
		name: "migration-tuner", args: []string{"--plugin-name=migration-tuner", "--socket-root={root}"}, socket: "migration-tuner/hook.sock",
		vmi: vmi("migration-tuner", `    migration.example.com/parallel: "4"
    migration.example.com/postcopy: "false"
`, ""),
	},
	{
		name: "template", args: []string{"--plugin-name=template", "--socket-root={root}"}, socket: "template/hook.sock",
		vmi: vmi("template", "    template.example.com/description: conformance\n", ""),
	},
	{
		name: "node-hook-recorder", args: []string{"--socket={root}/node.sock", "--events-file={root}/events.jsonl"}, socket: "node.sock",
		vmi: vmi("node-hook-recorder", "", ""),
	},
}

// vmi is a VMI in namespace ns1 opted in to plugin, with extra labels and
// spec (indented YAML).
func vmi(plugin, labels, spec string) string {
	if spec == "" {
		spec = "  domain:\n    devices: {}\n"
	}
	return fmt.Sprintf(`apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  namespace: ns1
  name: vm1
  labels:
    plugins.example.com/%s: ""
%s  annotations:
    crash.example.com/on-crash: coredump-restart
spec:
%s`, plugin, labels, spec)
}

func TestMain(m *testing.M) {
	code := m.Run()
	kvpctl.Remove()
	for _, b := range builds {
		b.Remove()
	}
	os.Exit(code)
}

var builds = map[string]*gobuild.Binary{}

func binary(name string) *gobuild.Binary {
	if builds[name] == nil {
		builds[name] = &gobuild.Binary{Module: "sample-sidecars", Pkg: "./" + name + "/cmd/" + name}
	}
	return builds[name]
}

// socketRoot is a directory short enough for the 108-byte socket path limit.
func socketRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kvp-conf-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// process is a hook server started as a process.
type process struct {
	name string
	cmd  *exec.Cmd
	// logs is the process's output; read it once exited is drained.
	logs   *bytes.Buffer
	exited chan error
}

// launch starts a hook server as a process and waits for its socket. The
// caller stops it.
func launch(t *testing.T, socket string, env []string, name string, args ...string) *process {
	t.Helper()
	p := &process{name: name, cmd: exec.Command(name, args...), logs: &bytes.Buffer{}, exited: make(chan error, 1)}
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	p.cmd.Env = append(append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1"), env...)
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	running, exited := poll.WhileRunning(t.Context(), p.cmd)
	go func() { p.exited <- <-exited }()
	if err := poll.UntilContext(running, 30*time.Second, func() error { return isSocket(socket) }); err != nil {
		t.Fatalf("%s not serving: %v\n%s", name, err, p.logs.String())
	}
	return p
}

// stopped sends SIGTERM and returns the exit error, or fails t if the
// process is still running after within. The process is killed then.
func (p *process) stopped(t *testing.T, within time.Duration) error {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.exited:
		return err
	case <-time.After(within):
		_ = p.cmd.Process.Kill()
		<-p.exited //nolint:errcheck // only waits for the exit; the process was stopped on purpose
		t.Errorf("%s did not stop within %s of SIGTERM\n%s", p.name, within, p.logs.String())
		return nil
	}
}

// start runs a hook server as a process until the test ends and waits for
// its socket. At the end it is sent SIGTERM, as the kubelet does, and must
// exit and remove its socket.
func start(t *testing.T, socket string, env []string, name string, args ...string) {
	t.Helper()
	p := launch(t, socket, env, name, args...)
	t.Cleanup(func() {
		if err := p.stopped(t, 15*time.Second); err != nil {
			t.Errorf("%s after SIGTERM: %v\n%s", name, err, p.logs.String())
		}
		if _, err := os.Lstat(socket); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left its socket %s behind", name, socket)
		}
	})
}

// isSocket: a socket is at path.
func isSocket(path string) error {
	fi, err := os.Stat(path)
	if err == nil && fi.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("%s is not a socket", path)
	}
	return err
}

// conformance runs the kvpctl binary and returns its exit status and output.
func conformance(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(kvpctl.Path(t), append([]string{"conformance"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("kvpctl: %v", err)
	return 0, "", ""
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// noCloudISO builds a NoCloud cloud-init ISO with genisoimage, as
// KubeVirt's does.
func noCloudISO(t *testing.T) string {
	t.Helper()
	src := t.TempDir()
	writeFile(t, src, "meta-data", "instance-id: vm1\n")
	writeFile(t, src, "user-data", "#cloud-config\n")
	iso := filepath.Join(t.TempDir(), "noCloud.iso")
	out, err := exec.Command("genisoimage", "-quiet", "-output", iso, "-volid", "cidata", "-joliet", "-rock",
		filepath.Join(src, "user-data"), filepath.Join(src, "meta-data")).CombinedOutput()
	if err != nil {
		t.Fatalf("genisoimage (installed by make setup): %v\n%s", err, out)
	}
	return iso
}

func samplePath(t *testing.T, elem ...string) string {
	t.Helper()
	p, err := repo.Path(append([]string{"sample-sidecars"}, elem...)...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// wantAllPassed fails unless kvpctl exited 0 with no FAIL line and at least
// minChecks PASS lines.
func wantAllPassed(t *testing.T, code int, stdout, stderr string, minChecks int) {
	t.Helper()
	t.Log("\n" + stdout)
	if code != 0 || strings.Contains(stdout, "\nFAIL ") || strings.Count(stdout, "\nPASS ") < minChecks || !strings.Contains(stdout, " 0 failed") {
		t.Fatalf("exit %d, want 0 with at least %d passed checks\nstdout:\n%s\nstderr:\n%s", code, minChecks, stdout, stderr)
	}
}

func TestEverySampleIsChecked(t *testing.T) {
	plugins, err := filepath.Glob(samplePath(t, "*", "plugin.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var found, listed []string
	for _, p := range plugins {
		found = append(found, filepath.Base(filepath.Dir(p)))
	}
	for _, s := range samples {
		listed = append(listed, s.name)
	}
	listed = append(listed, pythonSample)
	sort.Strings(found)
	sort.Strings(listed)
	if strings.Join(found, " ") != strings.Join(listed, " ") {
		t.Errorf("samples with a Plugin: %v; checked here: %v", found, listed)
	}
}

func TestGoSamplesPassConformance(t *testing.T) {
	for _, s := range samples {
		t.Run(s.name, func(t *testing.T) {
			root := socketRoot(t)
			args := make([]string, len(s.args))
			for i, a := range s.args {
				args[i] = strings.ReplaceAll(a, "{root}", root)
			}
			socket := filepath.Join(root, s.socket)
			start(t, socket, s.env, binary(s.name).Path(t), args...)
			flags := []string{"--plugin", samplePath(t, s.name, "plugin.yaml"), "--socket", socket,
				"--vmi", writeFile(t, t.TempDir(), "vmi.yaml", s.vmi)}
			if s.iso {
				flags = append(flags, "--iso", noCloudISO(t))
			}
			code, stdout, stderr := conformance(t, flags...)
			wantAllPassed(t, code, stdout, stderr, 4)
		})
	}
}

func TestPythonSamplePassesConformance(t *testing.T) {
	root := socketRoot(t)
	socket := filepath.Join(root, pythonSample, "hook.sock")
	start(t, socket, nil, "/usr/bin/python3", samplePath(t, pythonSample, "sidecar.py"), "--socket-root", root)
	fi, err := os.Stat(socket)
	if err != nil || fi.Mode().Perm() != 0o660 {
		t.Errorf("socket mode %v (%v), want 0660 as the SDK makes it", fi.Mode().Perm(), err)
	}
	vmiFile := writeFile(t, t.TempDir(), "vmi.yaml", vmi(pythonSample, "", ""))
	code, stdout, stderr := conformance(t, "--plugin", samplePath(t, pythonSample, "plugin.yaml"), "--socket", socket, "--vmi", vmiFile)
	wantAllPassed(t, code, stdout, stderr, 8)
}

// The Python sample's domain, handed on by the launcher's pipeline, is one
// libvirt itself accepts, with the crash action the VMI asked for.
func TestPythonSampleDomainIsDefinedByLibvirt(t *testing.T) {
	root := socketRoot(t)
	socket := filepath.Join(root, pythonSample, "hook.sock")
	start(t, socket, nil, "/usr/bin/python3", samplePath(t, pythonSample, "sidecar.py"), "--socket-root", root)
	domainFile, err := repo.Path("protos", "sdk", "sdktest", "testdata", "domain_x86_64.xml")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(kvpctl.Path(t), "guest-definition", "--plugins", samplePath(t, pythonSample, "plugin.yaml"),
		"--vmi", writeFile(t, t.TempDir(), "vmi.yaml", vmi(pythonSample, "", "")), "--domain", domainFile, "--socket-root", root)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kvpctl guest-definition: %v\n%s", err, stderr.String())
	}
	conn, err := libvirt.NewConnect("test:///default")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	dom, err := conn.DomainDefineXML(strings.Replace(string(out), `type="kvm"`, `type="test"`, 1))
	if err != nil {
		t.Fatalf("libvirt refuses the domain: %v", err)
	}
	defer dom.Free()
	xml, err := dom.GetXMLDesc(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<on_crash>coredump-restart</on_crash>", `<kubevirt xmlns="http://kubevirt.io">`} {
		if !strings.Contains(xml, want) {
			t.Errorf("libvirt's domain lacks %s:\n%s", want, xml)
		}
	}
}

func TestBrokenPythonSidecarFailsConformance(t *testing.T) {
	root := socketRoot(t)
	socket := filepath.Join(root, "broken", "hook.sock")
	if err := os.MkdirAll(filepath.Dir(socket), 0o750); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "refuses_migration_target.py"))
	if err != nil {
		t.Fatal(err)
	}
	start(t, socket, nil, "/usr/bin/python3", script, samplePath(t, pythonSample), socket)
	code, stdout, stderr := conformance(t, "--plugin", samplePath(t, pythonSample, "plugin.yaml"), "--socket", socket)
	if code != 1 || !strings.Contains(stdout, "FAIL GuestDefinition/BothInvocationContexts") || !strings.Contains(stdout, "only Boot is handled") {
		t.Fatalf("exit %d, want 1 failing GuestDefinition/BothInvocationContexts\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// A crash action the sample does not know fails the call with
// InvalidArgument naming the VMI, the annotation and the value.
func TestPythonSampleRefusesUnknownCrashAction(t *testing.T) {
	root := socketRoot(t)
	socket := filepath.Join(root, pythonSample, "hook.sock")
	start(t, socket, nil, "/usr/bin/python3", samplePath(t, pythonSample, "sidecar.py"), "--socket-root", root)
	domainFile, err := repo.Path("protos", "sdk", "sdktest", "testdata", "domain_x86_64.xml")
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(vmi(pythonSample, "", ""), "coredump-restart", "explode", 1)
	cmd := exec.Command(kvpctl.Path(t), "guest-definition", "--plugins", samplePath(t, pythonSample, "plugin.yaml"),
		"--vmi", writeFile(t, t.TempDir(), "vmi.yaml", bad), "--domain", domainFile, "--socket-root", root)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("kvpctl guest-definition succeeded with an unknown crash action:\n%s", out)
	}
	for _, want := range []string{"InvalidArgument", "VMI ns1/vm1", "crash.example.com/on-crash", "'explode'"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("error does not mention %s:\n%s", want, out)
		}
	}
}
