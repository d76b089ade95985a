// SPDX-License-Identifier: Apache-2.0

package launcher_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"
	"sigs.k8s.io/yaml"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/domainrun"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
	"github.com/kubevirt-plugins/framework/tests/framework/gobuild"
	"github.com/kubevirt-plugins/framework/tests/framework/libvirtd"
	"github.com/kubevirt-plugins/framework/tests/framework/repo"
)

// testTimeout bounds every libvirt and pipeline step of one test; it only
// guards against hangs, no assertion depends on it.
const testTimeout = 3 * time.Minute

// binaries caches the sample sidecars built for this test binary: each is
// built once, whichever test asks first.
var binaries = struct {
	sync.Mutex
	dir   string
	built map[string]string
}{built: map[string]string{}}

// sidecarBinary builds the command in sample-sidecars/<cmdDir> (a path
// relative to that module) and returns the executable.
func sidecarBinary(t *testing.T, cmdDir string) string {
	t.Helper()
	binaries.Lock()
	defer binaries.Unlock()
	if bin, ok := binaries.built[cmdDir]; ok {
		return bin
	}
	module, err := repo.Path("sample-sidecars")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(module, cmdDir)); err != nil {
		t.Fatalf("sample sidecar %s is missing: %v", cmdDir, err)
	}
	if binaries.dir == "" {
		// Not t.TempDir: the binaries outlive the test that built them.
		binaries.dir, err = os.MkdirTemp("", "kvp-sidecars-")
		if err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(binaries.dir, filepath.Base(cmdDir))
	if err := gobuild.Static("sample-sidecars", "./"+cmdDir, bin); err != nil {
		t.Fatal(err)
	}
	binaries.built[cmdDir] = bin
	return bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binaries.dir != "" {
		_ = os.RemoveAll(binaries.dir)
	}
	os.Exit(code)
}

// shortTempDir returns a directory under the system temp dir, removed in
// cleanup. Unix socket paths are limited to 108 bytes, and t.TempDir's
// names, built from the test name, easily exceed that.
func shortTempDir(t *testing.T, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// startSidecar runs a sample sidecar as a host process serving plugin's
// socket under socketRoot, and stops it (SIGTERM, then wait) in cleanup.
// The pipeline waits for the socket itself, within its socket wait budget.
func startSidecar(t *testing.T, bin, plugin, socketRoot string, args ...string) {
	t.Helper()
	args = append([]string{"-plugin-name", plugin, "-socket-root", socketRoot}, args...)
	cmd := exec.Command(bin, args...)
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited: //nolint:errcheck // only waits for the exit; the process was stopped on purpose
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited //nolint:errcheck // only waits for the exit; the process was stopped on purpose
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(bin), logs.String())
		}
	})
}

// samplePlugin returns the Plugin manifest a sample ships
// (sample-sidecars/<sample>/plugin.yaml), so that the tests exercise the
// sample as users deploy it.
func samplePlugin(t *testing.T, sample string) string {
	t.Helper()
	path, err := repo.Path("sample-sidecars", sample, "plugin.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// plugins decodes Plugin manifests.
func plugins(t *testing.T, manifests ...string) []pluginv1alpha1.Plugin {
	t.Helper()
	var out []pluginv1alpha1.Plugin
	for _, m := range manifests {
		var p pluginv1alpha1.Plugin
		if err := yaml.UnmarshalStrict([]byte(m), &p); err != nil {
			t.Fatalf("decode plugin: %v\n%s", err, m)
		}
		out = append(out, p)
	}
	return out
}

// newPipeline builds the launcher pipeline the way virt-launcher would,
// with the sockets under socketRoot.
func newPipeline(t *testing.T, socketRoot string, pls []pluginv1alpha1.Plugin) *pipeline.Pipeline {
	t.Helper()
	p, err := pipeline.New(pls, pipeline.Options{Logger: testr.New(t), SocketRoot: socketRoot})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func newVMI(name string, labels map[string]string) *kubevirtv1.VirtualMachineInstance {
	return &kubevirtv1.VirtualMachineInstance{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels, UID: "6a1c3b52-0d4e-4f8a-9c1e-2b7d5e8f9a01"},
	}
}

// parseDomain reads the XML virsh dumpxml printed.
func parseDomain(t *testing.T, xml string) *libvirtxml.Domain {
	t.Helper()
	var d libvirtxml.Domain
	if err := d.Unmarshal(xml); err != nil {
		t.Fatalf("parse domain XML: %v\n%s", err, xml)
	}
	return &d
}

// bootRunning defines and starts domain on node through the libvirt adapter,
// fails the test unless libvirt reports it running, and returns the live
// domain as virsh dumpxml prints it. The domain handle is freed when the
// test ends.
func bootRunning(ctx context.Context, t *testing.T, node *libvirtd.Node, conn *libvirt.Connect, domain *libvirtxml.Domain) *libvirtxml.Domain {
	t.Helper()
	dom, err := domainrun.DefineAndStart(ctx, conn, domain)
	if err != nil {
		t.Fatalf("%v\n%s", err, node.Logs(ctx))
	}
	t.Cleanup(func() { _ = dom.Free() })
	if state, _, err := dom.GetState(); err != nil || state != libvirt.DOMAIN_RUNNING {
		t.Fatalf("domain %s state %d (%v), want running", domain.Name, state, err)
	}
	out, err := node.Virsh(ctx, "dumpxml", domain.Name)
	if err != nil {
		t.Fatal(err)
	}
	return parseDomain(t, out)
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}
