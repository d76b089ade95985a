// SPDX-License-Identifier: Apache-2.0

// Package hookcounts follows the launcher hook counts from the launcher to
// virt-handler's registry through the two runtimes' public APIs, as the
// patched virt-launcher and virt-handler call them: virt-handler hands the
// launcher its Plugins (handler-runtime/kubevirthost's LauncherPlugins),
// the launcher runs its hook points (launcher-runtime/kubevirthost) and
// takes the counts after each (TakeHookCounts), and virt-handler records
// the bytes (RecordLauncherHookCounts) on the registry Prometheus scrapes.
// Nothing outside the test process is needed: the Plugin store reads a
// fake API client, the sidecars are sockets that never come up.
package hookcounts

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubevirtv1 "kubevirt.io/api/core/v1"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	handlerhost "github.com/kubevirt-plugins/framework/handler-runtime/kubevirthost"
	"github.com/kubevirt-plugins/framework/handler-runtime/store"
	launcherhost "github.com/kubevirt-plugins/framework/launcher-runtime/kubevirthost"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
)

const domainXML = `<domain type="kvm"><name>default_web-01</name><cpu mode="host-model"></cpu></domain>`

// labelWalk is a hook condition admitted under the estimate's bound of 256
// labels that the condition cost limit stops on a VMI with 5,000.
const labelWalk = `vmi.Labels.all(a, vmi.Labels.all(b, size(a) + size(b) > 0))`

func object(t *testing.T, name string, spec pluginv1alpha1.PluginSpec) runtime.Object {
	t.Helper()
	p := &pluginv1alpha1.Plugin{
		TypeMeta:   metav1.TypeMeta{APIVersion: pluginv1alpha1.GroupVersion.String(), Kind: "Plugin"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
		Spec:       spec,
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

func celHook(expr, condition string) pluginv1alpha1.LauncherHook {
	return pluginv1alpha1.LauncherHook{Condition: condition, CEL: &pluginv1alpha1.CELHook{HookPoint: pluginv1alpha1.GuestDefinition, Expression: expr}}
}

// neverUp is a PreBoot sidecar hook whose socket never appears.
func neverUp(plugin string, strategy pluginv1alpha1.FailureStrategy) pluginv1alpha1.LauncherHook {
	return pluginv1alpha1.LauncherHook{
		Sidecar: &pluginv1alpha1.SidecarHook{
			PermittedHooks: []pluginv1alpha1.LauncherHookPoint{pluginv1alpha1.PreBoot},
			SocketPath:     pluginv1alpha1.PluginDir(plugin) + "hooks.sock",
		},
		FailureStrategy: strategy,
	}
}

func newVMI(labels map[string]string) *kubevirtv1.VirtualMachineInstance {
	return &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-01", Labels: labels}}
}

// series reads the launcher hook series of reg: "plugin hook_point
// outcome" for an outcome, "plugin hook_point cel" for the cost-limit
// stops.
func series(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			switch f.GetName() {
			case pipeline.MetricHookOutcomes:
				out[l["plugin"]+" "+l["hook_point"]+" "+l["outcome"]] = m.GetCounter().GetValue()
			case pipeline.MetricCELCostLimitExceeded:
				out[l["plugin"]+" "+l["hook_point"]+" cel"] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// What a VM's launcher hooks did reaches virt-handler's registry exactly:
// a CEL hook that applies and one whose plugin condition is false, sidecars
// that never come up under Ignore and under Fail, a condition the CEL cost
// limit stops; each series counts what the launcher's own metrics counted,
// the Plugins' other series are at 0, and a Plugin with node hooks only has
// none.
func TestLauncherHookOutcomesReachVirtHandlersRegistryExactly(t *testing.T) {
	// virt-handler, with its Plugin store.
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{store.Resource(): "PluginList"},
		object(t, "cpu-tuning", pluginv1alpha1.PluginSpec{
			Condition:     `"tuning" in vmi.Labels`,
			LauncherHooks: []pluginv1alpha1.LauncherHook{celHook(`Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`, "")},
		}),
		object(t, "ignored-sidecar", pluginv1alpha1.PluginSpec{LauncherHooks: []pluginv1alpha1.LauncherHook{neverUp("ignored-sidecar", pluginv1alpha1.Ignore)}}),
		object(t, "label-walker", pluginv1alpha1.PluginSpec{LauncherHooks: []pluginv1alpha1.LauncherHook{celHook(`Domain{Title: "walked"}`, labelWalk)}}),
		object(t, "node-only", pluginv1alpha1.PluginSpec{NodeHooks: []pluginv1alpha1.NodeHook{{
			Socket: "/var/run/kubevirt/node-only/node.sock", PermittedHooks: []pluginv1alpha1.NodeHookPoint{pluginv1alpha1.PreVMStart},
		}}}),
		object(t, "required-sidecar", pluginv1alpha1.PluginSpec{LauncherHooks: []pluginv1alpha1.LauncherHook{neverUp("required-sidecar", pluginv1alpha1.Fail)}}),
	)
	plugins, err := store.New(store.Options{Client: client})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = plugins.Run(t.Context()) }()
	handlerRegistry := prometheus.NewPedanticRegistry()
	handler, err := handlerhost.New(handlerhost.Options{Plugins: plugins, Registerer: handlerRegistry})
	if err != nil {
		t.Fatal(err)
	}
	handler.Run(t.Context())
	if !handler.WaitForSync(t.Context()) {
		t.Fatal("the Plugin store did not sync")
	}

	// virt-launcher, with a registry of its own that nobody scrapes.
	sockets := t.TempDir()
	for _, dir := range []string{"ignored-sidecar", "required-sidecar"} {
		if err := os.MkdirAll(filepath.Join(sockets, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	launcherRegistry := prometheus.NewPedanticRegistry()
	launcher := launcherhost.New(launcherhost.Options{Registerer: launcherRegistry,
		Pipeline: pipeline.Options{SocketRoot: sockets, SocketWaitBudget: 100 * time.Millisecond}})
	defer launcher.Close()
	tuned := newVMI(map[string]string{"tuning": "cpu"})
	data, err := handler.LauncherPlugins(tuned)
	if err != nil {
		t.Fatal(err)
	}
	if err := launcher.SetPlugins(data); err != nil {
		t.Fatal(err)
	}
	// What the host does after each hook point call.
	report := func(step string) {
		t.Helper()
		if err := handler.RecordLauncherHookCounts(tuned, launcher.TakeHookCounts()); err != nil {
			t.Fatalf("%s: virt-handler refused the launcher's counts: %v", step, err)
		}
	}

	// One sync: GuestDefinition, then PreBoot, where ignored-sidecar runs
	// first and is skipped under Ignore, then required-sidecar fails the
	// call under Fail.
	if _, _, err := launcher.GuestDefinition(t.Context(), tuned, domainXML); err != nil {
		t.Fatal(err)
	}
	if _, err := launcher.PreBoot(t.Context(), tuned, ""); err == nil {
		t.Fatal("PreBoot succeeded with a Fail sidecar that never comes up")
	}
	report("GuestDefinition and PreBoot")
	huge := newVMI(map[string]string{"tuning": "cpu"})
	for i := range 5000 {
		huge.Labels[fmt.Sprintf("owner.example.org/l%d", i)] = "v"
	}
	if _, _, err := launcher.GuestDefinition(t.Context(), huge, domainXML); err == nil {
		t.Fatal("a condition over 5,000 labels was not stopped")
	}
	report("GuestDefinition on 5,000 labels")
	// Two calls before the host takes the counts: one report counts 2 for
	// label-walker's successes.
	for _, v := range []*kubevirtv1.VirtualMachineInstance{newVMI(nil), tuned} {
		if _, _, err := launcher.GuestDefinition(t.Context(), v, domainXML); err != nil {
			t.Fatal(err)
		}
	}
	report("GuestDefinition untuned, then tuned")
	if _, _, err := launcher.PreMigrationSource(t.Context(), tuned, 0, nil); err != nil {
		t.Fatal(err)
	}
	report("PreMigrationSource, which no hook handles")

	want := `
# HELP kubevirt_plugins_launcher_hook_cel_cost_limit_exceeded_total Evaluations of a plugin's CEL condition or GuestDefinition expression stopped by the CEL cost limit in a launcher, per plugin and hook point, as the virt-launchers of the node reported them to virt-handler.
# TYPE kubevirt_plugins_launcher_hook_cel_cost_limit_exceeded_total counter
kubevirt_plugins_launcher_hook_cel_cost_limit_exceeded_total{hook_point="GuestDefinition",plugin="cpu-tuning"} 0
kubevirt_plugins_launcher_hook_cel_cost_limit_exceeded_total{hook_point="GuestDefinition",plugin="label-walker"} 1
kubevirt_plugins_launcher_hook_cel_cost_limit_exceeded_total{hook_point="PreBoot",plugin="ignored-sidecar"} 0
kubevirt_plugins_launcher_hook_cel_cost_limit_exceeded_total{hook_point="PreBoot",plugin="required-sidecar"} 0
# HELP kubevirt_plugins_launcher_hook_outcomes_total Launcher hook runs per plugin, hook point and outcome (success, error, ignored, skipped), as the virt-launchers of the node reported them to virt-handler.
# TYPE kubevirt_plugins_launcher_hook_outcomes_total counter
kubevirt_plugins_launcher_hook_outcomes_total{hook_point="GuestDefinition",outcome="error",plugin="cpu-tuning"} 0
kubevirt_plugins_launcher_hook_outcomes_total{hook_point="GuestDefinition",outcome="ignored",plugin="cpu-tuning"} 0
kubevirt_plugins_launcher_hook_outcomes_total{hook_point="GuestDefinition",outcome="skipped",plugin="cpu-tuning"} 1
kubevirt_plugins_launcher_hook_outcomes_total{hook_point="GuestDefinition",outcome="success",plugin="cpu-tuning"} 3
kubevirt_plugins_launcher_hook_outcomes_total{hook_point="GuestDefinition",outcome="error",plugin="label-walker"} 1
kubevirt_plugins_launcher_hook_outcomes_total{hook_point="GuestDefinition",outcome="ignored",plugin="label-walker"} 0
kubevirt_plugins_launcher_hook_outcomes_total{hook_point="GuestDefinition",outcome="skipped",plugin="label-walker"} 0
kubevirt_plugins_launcher_hook_outcomes_total{hook_point="GuestDefinition",outcome="success",plugin="label-walker"} 3
kubevirt_plugins_launcher_hook_outcomes_total{hook_point="PreBoot",outcome="error",plugin="ignored-sidecar"} 0
kubevirt_plugins_launcher_hook_outcomes_total{hook_point="PreBoot",outcome="ignored",plugin="ignored-sidecar"} 1
kubevirt_plugins_launcher_hook_outcomes_total{hook_point="PreBoot",outcome="skipped",plugin="ignored-sidecar"} 0
kubevirt_plugins_launcher_hook_outcomes_total{hook_point="PreBoot",outcome="success",plugin="ignored-sidecar"} 0
kubevirt_plugins_launcher_hook_outcomes_total{hook_point="PreBoot",outcome="error",plugin="required-sidecar"} 1
kubevirt_plugins_launcher_hook_outcomes_total{hook_point="PreBoot",outcome="ignored",plugin="required-sidecar"} 0
kubevirt_plugins_launcher_hook_outcomes_total{hook_point="PreBoot",outcome="skipped",plugin="required-sidecar"} 0
kubevirt_plugins_launcher_hook_outcomes_total{hook_point="PreBoot",outcome="success",plugin="required-sidecar"} 0
`
	if err := testutil.GatherAndCompare(handlerRegistry, strings.NewReader(want),
		pipeline.MetricHookOutcomes, pipeline.MetricCELCostLimitExceeded); err != nil {
		t.Fatalf("virt-handler's registry: %v", err)
	}
	// The launcher's own series, which nobody scrapes, say the same.
	inHandler := series(t, handlerRegistry)
	inLauncher := series(t, launcherRegistry)
	for k, v := range inLauncher {
		if inHandler[k] != v {
			t.Errorf("%s: %v in virt-handler, %v in the launcher", k, inHandler[k], v)
		}
	}
	for k, v := range inHandler {
		if _, ok := inLauncher[k]; !ok && v != 0 {
			t.Errorf("%s: %v in virt-handler, no series in the launcher", k, v)
		}
	}
	if data := launcher.TakeHookCounts(); data != nil {
		t.Errorf("counts left after the last report: %s", data)
	}
}
