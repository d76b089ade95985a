// SPDX-License-Identifier: Apache-2.0

package kubevirthost_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/kubevirt-plugins/framework/api/handover"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/kubevirthost"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
)

const domainXML = `<domain type="kvm"><name>default_web-01</name><cpu mode="host-model"></cpu></domain>`

func vmi() *kubevirtv1.VirtualMachineInstance {
	return &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{
		Namespace: "default", Name: "web-01", Labels: map[string]string{"tuning": "cpu"},
	}}
}

func handed(t *testing.T, plugins ...pluginv1alpha1.Plugin) []byte {
	t.Helper()
	data, err := handover.Encode(plugins)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func celPlugin(name, expr string) pluginv1alpha1.Plugin {
	return pluginv1alpha1.Plugin{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: pluginv1alpha1.PluginSpec{
			Condition: `"tuning" in vmi.Labels`,
			LauncherHooks: []pluginv1alpha1.LauncherHook{{CEL: &pluginv1alpha1.CELHook{
				HookPoint: pluginv1alpha1.GuestDefinition, Expression: expr,
			}}},
		},
	}
}

func sidecarPlugin(name string, point pluginv1alpha1.LauncherHookPoint, strategy pluginv1alpha1.FailureStrategy) pluginv1alpha1.Plugin {
	return pluginv1alpha1.Plugin{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: pluginv1alpha1.PluginSpec{
			LauncherHooks: []pluginv1alpha1.LauncherHook{{
				Sidecar: &pluginv1alpha1.SidecarHook{
					PermittedHooks: []pluginv1alpha1.LauncherHookPoint{point},
					SocketPath:     pluginv1alpha1.SocketsRoot + "/" + name + "/hooks.sock",
				},
				FailureStrategy: strategy,
			}},
		},
	}
}

func TestAVMNoPluginSelectsKeepsItsDomainByteForByte(t *testing.T) {
	l := kubevirthost.New(kubevirthost.Options{})
	for _, data := range [][]byte{nil, handed(t)} {
		if err := l.SetPlugins(data); err != nil {
			t.Fatal(err)
		}
		out, report, err := l.GuestDefinition(t.Context(), vmi(), domainXML)
		if err != nil || report != nil || out != domainXML {
			t.Fatalf("with %q handed over: got %q, report %v, error %v; want the domain unchanged", data, out, report, err)
		}
		if r, err := l.PreBoot(t.Context(), vmi(), "/nowhere.iso"); r != nil || err != nil {
			t.Fatalf("PreBoot with no Plugin: report %v, error %v", r, err)
		}
		res, _, err := l.PreMigrationSource(t.Context(), vmi(), 0x3, nil)
		if err != nil || res.Flags != 0x3 {
			t.Fatalf("PreMigrationSource with no Plugin: %+v, %v", res, err)
		}
	}
}

func TestGuestDefinitionAppliesTheHandedOverCELHook(t *testing.T) {
	l := kubevirthost.New(kubevirthost.Options{})
	if err := l.SetPlugins(handed(t, celPlugin("cpu-tuning", `Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`))); err != nil {
		t.Fatal(err)
	}
	if got := l.Plugins(); len(got) != 1 || got[0] != "cpu-tuning" {
		t.Fatalf("Plugins() = %v", got)
	}
	out, report, err := l.GuestDefinition(t.Context(), vmi(), domainXML)
	if err != nil {
		t.Fatal(err)
	}
	d := &libvirtxml.Domain{}
	if err := d.Unmarshal(out); err != nil {
		t.Fatal(err)
	}
	if d.CPU == nil || d.CPU.Mode != "host-passthrough" || d.Name != "default_web-01" {
		t.Fatalf("domain after GuestDefinition: %s", out)
	}
	if len(report.Hooks) != 1 || report.Hooks[0].Plugin != "cpu-tuning" {
		t.Fatalf("report: %+v", report)
	}
}

func TestSetPluginsWithTheSameDataKeepsThePipeline(t *testing.T) {
	l := kubevirthost.New(kubevirthost.Options{})
	data := handed(t, celPlugin("a", `Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`))
	if err := l.SetPlugins(data); err != nil {
		t.Fatal(err)
	}
	// A second SetPlugins with other data replaces the chain; the same data
	// again changes nothing (the result stays the first chain's).
	if err := l.SetPlugins(data); err != nil {
		t.Fatal(err)
	}
	if err := l.SetPlugins(handed(t, celPlugin("b", `Domain{CPU: DomainCPU{Mode: "custom"}}`))); err != nil {
		t.Fatal(err)
	}
	out, _, err := l.GuestDefinition(t.Context(), vmi(), domainXML)
	if err != nil || !strings.Contains(out, `mode="custom"`) {
		t.Fatalf("after new data: %s, %v", out, err)
	}
	if got := l.Plugins(); len(got) != 1 || got[0] != "b" {
		t.Fatalf("Plugins() = %v, want [b]", got)
	}
}

func TestSetPluginsRefusesDataThatIsNotAHandover(t *testing.T) {
	l := kubevirthost.New(kubevirthost.Options{})
	if err := l.SetPlugins(handed(t, celPlugin("a", `Domain{CPU: DomainCPU{Mode: "custom"}}`))); err != nil {
		t.Fatal(err)
	}
	// What an alpha-1 virt-handler hands over: Plugins without the
	// envelope.
	err := l.SetPlugins([]byte(`[{"metadata": {"name": "old"}, "spec": {"domainHooks": []}}]`))
	if err == nil || !strings.Contains(err.Error(), "element 0 holds no") {
		t.Fatalf("error = %v", err)
	}
	// The Plugins held before stay.
	if got := l.Plugins(); len(got) != 1 || got[0] != "a" {
		t.Fatalf("Plugins() after refused data = %v, want [a]", got)
	}
}

func TestGuestDefinitionRefusesADomainThatDoesNotDecode(t *testing.T) {
	l := kubevirthost.New(kubevirthost.Options{})
	if err := l.SetPlugins(handed(t, celPlugin("a", `Domain{CPU: DomainCPU{Mode: "custom"}}`))); err != nil {
		t.Fatal(err)
	}
	_, _, err := l.GuestDefinition(t.Context(), vmi(), "<domain")
	if err == nil || !strings.Contains(err.Error(), "reading the domain virt-launcher generated") {
		t.Fatalf("error = %v", err)
	}
}

// A sidecar that never comes up fails PreBoot under Fail with an error
// naming the plugin and the hook point, and is skipped under Ignore.
func TestPreBootSidecarThatNeverComesUp(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "late"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		strategy pluginv1alpha1.FailureStrategy
		fails    bool
	}{{pluginv1alpha1.Fail, true}, {pluginv1alpha1.Ignore, false}} {
		l := kubevirthost.New(kubevirthost.Options{Pipeline: pipeline.Options{SocketRoot: root, SocketWaitBudget: 200 * time.Millisecond}})
		if err := l.SetPlugins(handed(t, sidecarPlugin("late", pluginv1alpha1.PreBoot, c.strategy))); err != nil {
			t.Fatal(err)
		}
		report, err := l.PreBoot(t.Context(), vmi(), "")
		var he *pipeline.HookError
		if c.fails {
			if !errors.As(err, &he) || he.Plugin != "late" || !strings.Contains(err.Error(), "PreBoot") {
				t.Fatalf("%s: error = %v, want a *HookError of plugin late at PreBoot", c.strategy, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: error = %v", c.strategy, err)
		}
		if failed := report.Failed(); len(failed) != 1 || failed[0].Plugin != "late" {
			t.Fatalf("%s: report's failures = %+v", c.strategy, failed)
		}
		_ = l.Close()
	}
}

// What Ignore skipped is handed out once, for virt-launcher's Warning
// Event: each failure names the plugin and the hook point and says the VM
// went on without it; a Fail failure is not among them (it is the call's
// error).
func TestIgnoredFailuresAreHandedOutOnce(t *testing.T) {
	root := t.TempDir()
	for _, dir := range []string{"late", "broken"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	l := kubevirthost.New(kubevirthost.Options{Pipeline: pipeline.Options{SocketRoot: root, SocketWaitBudget: 200 * time.Millisecond}})
	defer l.Close()
	if got := l.Ignored(); len(got) != 0 {
		t.Fatalf("Ignored before any call = %q", got)
	}
	if err := l.SetPlugins(handed(t, sidecarPlugin("late", pluginv1alpha1.PreBoot, pluginv1alpha1.Ignore))); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := l.PreBoot(t.Context(), vmi(), ""); err != nil {
			t.Fatal(err)
		}
	}
	got := l.Ignored()
	if len(got) != 2 {
		t.Fatalf("Ignored after two PreBoot calls = %q, want two failures", got)
	}
	for _, msg := range got {
		if !strings.Contains(msg, `"late"`) || !strings.Contains(msg, "PreBoot") || !strings.Contains(msg, "failureStrategy is Ignore") {
			t.Errorf("Ignored failure %q does not name the plugin, the hook point and the Ignore", msg)
		}
	}
	if again := l.Ignored(); len(again) != 0 {
		t.Errorf("Ignored a second time = %q, want nothing (handed out once)", again)
	}
	if err := l.SetPlugins(handed(t, sidecarPlugin("broken", pluginv1alpha1.PreBoot, pluginv1alpha1.Fail))); err != nil {
		t.Fatal(err)
	}
	if _, err := l.PreBoot(t.Context(), vmi(), ""); err == nil {
		t.Fatal("PreBoot under Fail with no sidecar succeeded")
	}
	if got := l.Ignored(); len(got) != 0 {
		t.Errorf("Ignored after a Fail failure = %q, want nothing", got)
	}
}
