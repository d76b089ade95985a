// SPDX-License-Identifier: Apache-2.0

package launchermetrics_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubevirt-plugins/framework/api/hookcounts"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/handler-runtime/launchermetrics"
	"github.com/kubevirt-plugins/framework/handler-runtime/store"
)

// plugins is a Plugin store the test changes.
type plugins struct {
	mu       sync.Mutex
	plugins  []*pluginv1alpha1.Plugin
	revision uint64
	enabled  bool
	err      error
}

func (p *plugins) Snapshot() (store.Snapshot, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return store.Snapshot{}, p.err
	}
	if !p.enabled {
		return store.Snapshot{Revision: p.revision}, nil
	}
	return store.Snapshot{Plugins: p.plugins, Enabled: true, Revision: p.revision}, nil
}

func (p *plugins) set(ps ...*pluginv1alpha1.Plugin) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.plugins = ps
	p.revision++
}

func newPlugins(ps ...*pluginv1alpha1.Plugin) *plugins {
	return &plugins{plugins: ps, enabled: true, revision: 1}
}

// cel is a Plugin with a CEL hook at GuestDefinition.
func cel(name string) *pluginv1alpha1.Plugin {
	return &pluginv1alpha1.Plugin{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: pluginv1alpha1.PluginSpec{
		LauncherHooks: []pluginv1alpha1.LauncherHook{{CEL: &pluginv1alpha1.CELHook{HookPoint: pluginv1alpha1.GuestDefinition, Expression: "Domain{}"}}},
	}}
}

// sidecar is a Plugin with a sidecar hook at points.
func sidecar(name string, points ...pluginv1alpha1.LauncherHookPoint) *pluginv1alpha1.Plugin {
	return &pluginv1alpha1.Plugin{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: pluginv1alpha1.PluginSpec{
		LauncherHooks: []pluginv1alpha1.LauncherHook{{Sidecar: &pluginv1alpha1.SidecarHook{
			SocketPath: pluginv1alpha1.PluginDir(name) + "hooks.sock", PermittedHooks: points,
		}}},
	}}
}

// nodeOnly is a Plugin with node hooks only.
func nodeOnly(name string) *pluginv1alpha1.Plugin {
	return &pluginv1alpha1.Plugin{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: pluginv1alpha1.PluginSpec{
		NodeHooks: []pluginv1alpha1.NodeHook{{Socket: "/var/run/kubevirt/x/node.sock", PermittedHooks: []pluginv1alpha1.NodeHookPoint{pluginv1alpha1.PreVMStart}}},
	}}
}

func vmi(name string) *kubevirtv1.VirtualMachineInstance {
	return &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
}

func newCounters(t *testing.T, src launchermetrics.PluginSource) (*launchermetrics.Counters, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	c, err := launchermetrics.New(launchermetrics.Options{Plugins: src, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	return c, reg
}

const (
	outcomesHeader = `# HELP kubevirt_plugins_launcher_hook_outcomes_total Launcher hook runs per plugin, hook point and outcome (success, error, ignored, skipped), as the virt-launchers of the node reported them to virt-handler.
# TYPE kubevirt_plugins_launcher_hook_outcomes_total counter
`
	celHeader = `# HELP kubevirt_plugins_launcher_hook_cel_cost_limit_exceeded_total Evaluations of a plugin's CEL condition or GuestDefinition expression stopped by the CEL cost limit in a launcher, per plugin and hook point, as the virt-launchers of the node reported them to virt-handler.
# TYPE kubevirt_plugins_launcher_hook_cel_cost_limit_exceeded_total counter
`
)

// series are the lines of plugin's series at point, all at 0 but the
// outcomes and "cel" set gives.
func series(plugin string, point pluginv1alpha1.LauncherHookPoint, set map[string]int) (outcomes, cel string) {
	for _, o := range []string{"error", "ignored", "skipped", "success"} {
		outcomes += fmt.Sprintf("kubevirt_plugins_launcher_hook_outcomes_total{hook_point=%q,outcome=%q,plugin=%q} %d\n", point, o, plugin, set[o])
	}
	cel = fmt.Sprintf("kubevirt_plugins_launcher_hook_cel_cost_limit_exceeded_total{hook_point=%q,plugin=%q} %d\n", point, plugin, set["cel"])
	return outcomes, cel
}

// exposition is the text a scrape returns for the series given, each a
// pair from series, in label order.
func exposition(pairs ...[2]string) string {
	var o, c strings.Builder
	for _, p := range pairs {
		o.WriteString(p[0])
		c.WriteString(p[1])
	}
	out := ""
	if c.Len() > 0 {
		out += celHeader + c.String()
	}
	if o.Len() > 0 {
		out += outcomesHeader + o.String()
	}
	return out
}

func pair(plugin string, point pluginv1alpha1.LauncherHookPoint, set map[string]int) [2]string {
	o, c := series(plugin, point, set)
	return [2]string{o, c}
}

func compare(t *testing.T, reg *prometheus.Registry, want string) {
	t.Helper()
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		launchermetrics.MetricHookOutcomes, launchermetrics.MetricCELCostLimitExceeded); err != nil {
		t.Fatal(err)
	}
}

// The reports of the node's launchers add up on virt-handler's series, per
// plugin, hook point and outcome, whichever VM they come from.
func TestReportedCountsAddUpOnTheNodesSeries(t *testing.T) {
	c, reg := newCounters(t, newPlugins(cel("cpu-tuning"), sidecar("late", pluginv1alpha1.PreBoot)))
	for _, r := range []struct {
		vmi  string
		data string
	}{
		{"web-01", `{"version":1,"outcomes":[{"plugin":"cpu-tuning","hookPoint":"GuestDefinition","outcome":"success","count":2},
			{"plugin":"late","hookPoint":"PreBoot","outcome":"ignored","count":1}]}`},
		{"web-02", `{"version":1,"outcomes":[{"plugin":"cpu-tuning","hookPoint":"GuestDefinition","outcome":"success","count":1},
			{"plugin":"cpu-tuning","hookPoint":"GuestDefinition","outcome":"error","count":3}],
			"celCostLimitExceeded":[{"plugin":"cpu-tuning","hookPoint":"GuestDefinition","count":3}]}`},
		{"web-03", ``},
	} {
		if err := c.Record(vmi(r.vmi), []byte(r.data)); err != nil {
			t.Fatalf("%s: %v", r.vmi, err)
		}
	}
	compare(t, reg, exposition(
		pair("cpu-tuning", pluginv1alpha1.GuestDefinition, map[string]int{"success": 3, "error": 3, "cel": 3}),
		pair("late", pluginv1alpha1.PreBoot, map[string]int{"ignored": 1}),
	))
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", err, problems)
	}
}

// Every series of a Plugin the store holds is there at 0 before any report,
// for each launcher hook point it declares and only those, so that
// increase() sees its first failure; a Plugin the store gains later has
// them at the next scrape, and one with node hooks only has none.
func TestTheSeriesOfEveryKnownPluginStartAtZero(t *testing.T) {
	src := newPlugins(cel("cpu-tuning"), sidecar("migrator", pluginv1alpha1.PreMigrationSource, pluginv1alpha1.PreBoot), nodeOnly("node-only"))
	_, reg := newCounters(t, src)
	compare(t, reg, exposition(
		pair("cpu-tuning", pluginv1alpha1.GuestDefinition, nil),
		pair("migrator", pluginv1alpha1.PreBoot, nil),
		pair("migrator", pluginv1alpha1.PreMigrationSource, nil),
	))
	src.set(cel("cpu-tuning"), cel("late-comer"), sidecar("migrator", pluginv1alpha1.PreMigrationSource, pluginv1alpha1.PreBoot), nodeOnly("node-only"))
	compare(t, reg, exposition(
		pair("cpu-tuning", pluginv1alpha1.GuestDefinition, nil),
		pair("late-comer", pluginv1alpha1.GuestDefinition, nil),
		pair("migrator", pluginv1alpha1.PreBoot, nil),
		pair("migrator", pluginv1alpha1.PreMigrationSource, nil),
	))
}

// The series of a Plugin deleted from the store are dropped at the next
// scrape, the others stay, and a report naming it is refused from then on.
func TestTheSeriesOfADeletedPluginAreDropped(t *testing.T) {
	src := newPlugins(cel("cpu-tuning"), cel("gone"))
	c, reg := newCounters(t, src)
	if err := c.Record(vmi("web-01"), []byte(`{"version":1,"outcomes":[{"plugin":"gone","hookPoint":"GuestDefinition","outcome":"error","count":1},
		{"plugin":"cpu-tuning","hookPoint":"GuestDefinition","outcome":"success","count":1}]}`)); err != nil {
		t.Fatal(err)
	}
	src.set(cel("cpu-tuning"))
	compare(t, reg, exposition(pair("cpu-tuning", pluginv1alpha1.GuestDefinition, map[string]int{"success": 1})))
	err := c.Record(vmi("web-01"), []byte(`{"version":1,"outcomes":[{"plugin":"gone","hookPoint":"GuestDefinition","outcome":"error","count":1}]}`))
	if err == nil || !strings.Contains(err.Error(), `outcomes[0].plugin: "gone" is not a Plugin virt-handler knows`) {
		t.Fatalf("a report naming a deleted Plugin: error %v", err)
	}
	compare(t, reg, exposition(pair("cpu-tuning", pluginv1alpha1.GuestDefinition, map[string]int{"success": 1})))
}

// A report virt-handler refuses records nothing of it, and the error names
// the VMI and the field at fault.
func TestARefusedReportRecordsNothing(t *testing.T) {
	c, reg := newCounters(t, newPlugins(cel("cpu-tuning")))
	good := `{"plugin":"cpu-tuning","hookPoint":"GuestDefinition","outcome":"success","count":1}`
	for _, tc := range []struct{ name, data, want string }{
		{"an unknown Plugin after a known one", `{"version":1,"outcomes":[` + good + `,{"plugin":"stranger","hookPoint":"GuestDefinition","outcome":"error","count":1}]}`,
			`outcomes[1].plugin: "stranger" is not a Plugin virt-handler knows`},
		{"a cost-limit stop of an unknown Plugin", `{"version":1,"outcomes":[` + good + `],"celCostLimitExceeded":[{"plugin":"stranger","hookPoint":"PreBoot","count":1}]}`,
			`celCostLimitExceeded[0].plugin: "stranger" is not a Plugin virt-handler knows`},
		{"another version", `{"version":2,"outcomes":[` + good + `]}`, "version: 2 is not 1"},
		{"a node hook point", `{"version":1,"outcomes":[` + good + `,{"plugin":"cpu-tuning","hookPoint":"PreVMStart","outcome":"error","count":1}]}`,
			`outcomes[1].hookPoint: "PreVMStart" is not a launcher hook point`},
		{"an unknown outcome", `{"version":1,"outcomes":[{"plugin":"cpu-tuning","hookPoint":"GuestDefinition","outcome":"timeout","count":1}]}`,
			`outcomes[0].outcome: "timeout" is not one of`},
		{"a negative count", `{"version":1,"outcomes":[` + good + `,{"plugin":"cpu-tuning","hookPoint":"GuestDefinition","outcome":"error","count":-7}]}`,
			"outcomes[1].count: -7 is not between 1 and"},
		{"an absurd count", fmt.Sprintf(`{"version":1,"outcomes":[{"plugin":"cpu-tuning","hookPoint":"GuestDefinition","outcome":"error","count":%d}]}`, int64(1)<<53),
			"outcomes[0].count: 9007199254740992 is not between 1 and"},
		{"an oversized report", `{"version":1,"outcomes":[` + good + `]}` + strings.Repeat(" ", hookcounts.MaxSize), "larger than"},
		{"not a report", `cpu-tuning success 1`, "not a launcher hook counts report"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Record(vmi("web-01"), []byte(tc.data))
			if err == nil {
				t.Fatal("recorded")
			}
			for _, part := range []string{"launcher hook counts of VMI default/web-01", tc.want} {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %q does not say %q", err, part)
				}
			}
			compare(t, reg, exposition(pair("cpu-tuning", pluginv1alpha1.GuestDefinition, nil)))
		})
	}
}

// Before the store has synced no Plugin is known for sure: a report is
// refused with the store's error, and scrapes keep the series as they are.
// With the feature gate off no Plugin is known and the series are dropped.
func TestReportsWhileNoPluginIsKnownAreRefused(t *testing.T) {
	src := newPlugins(cel("cpu-tuning"))
	src.err = store.ErrNotSynced
	c, reg := newCounters(t, src)
	report := []byte(`{"version":1,"outcomes":[{"plugin":"cpu-tuning","hookPoint":"GuestDefinition","outcome":"success","count":1}]}`)
	if err := c.Record(vmi("web-01"), report); !errors.Is(err, store.ErrNotSynced) || !strings.Contains(err.Error(), "default/web-01") {
		t.Fatalf("before the store synced: error %v, want store.ErrNotSynced naming the VMI", err)
	}
	compare(t, reg, "")
	src.err = nil
	if err := c.Record(vmi("web-01"), report); err != nil {
		t.Fatal(err)
	}
	src.mu.Lock()
	src.enabled = false
	src.revision++
	src.mu.Unlock()
	if err := c.Record(vmi("web-01"), report); err == nil || !strings.Contains(err.Error(), "feature gate is off") {
		t.Fatalf("with the gate off: error %v", err)
	}
	compare(t, reg, "")
}

// A second Counters on the same Registerer (a second Handler) shares the
// series instead of failing.
func TestASecondCountersOnTheSameRegistererSharesTheSeries(t *testing.T) {
	src := newPlugins(cel("cpu-tuning"))
	first, reg := newCounters(t, src)
	second, err := launchermetrics.New(launchermetrics.Options{Plugins: src, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	report := []byte(`{"version":1,"outcomes":[{"plugin":"cpu-tuning","hookPoint":"GuestDefinition","outcome":"success","count":1}]}`)
	for _, c := range []*launchermetrics.Counters{first, second} {
		if err := c.Record(vmi("web-01"), report); err != nil {
			t.Fatal(err)
		}
	}
	compare(t, reg, exposition(pair("cpu-tuning", pluginv1alpha1.GuestDefinition, map[string]int{"success": 2})))
}

// durationsHeader and overlapsHeader begin the exposition of the two
// series rebuilt from the launchers' durations and overlaps.
const (
	durationsHeader = `# HELP kubevirt_plugins_launcher_hook_duration_seconds Time a launcher hook took, socket wait included, per plugin and hook point (runs skipped by their condition are not timed), as the virt-launchers of the node reported them to virt-handler.
# TYPE kubevirt_plugins_launcher_hook_duration_seconds histogram
`
	overlapsHeader = `# HELP kubevirt_plugins_launcher_hook_overlaps_total Parts of a domain a GuestDefinition hook of plugin changed after a hook of overwritten_plugin had in the same call (the later value is kept), as the virt-launchers of the node reported them to virt-handler.
# TYPE kubevirt_plugins_launcher_hook_overlaps_total counter
`
)

// histogram is the exposition of the duration histogram of plugin at
// point, with the cumulative count at each bound of
// hookcounts.DurationBuckets given by upTo (the count of the last bound
// given holds for the bounds after it), and the total count and sum.
func histogram(plugin string, point pluginv1alpha1.LauncherHookPoint, upTo map[float64]int, count int, sum string) string {
	var b strings.Builder
	n := 0
	for _, bound := range hookcounts.DurationBuckets {
		if v, ok := upTo[bound]; ok {
			n = v
		}
		fmt.Fprintf(&b, "kubevirt_plugins_launcher_hook_duration_seconds_bucket{hook_point=%q,plugin=%q,le=%q} %d\n", point, plugin, strconv.FormatFloat(bound, 'g', -1, 64), n)
	}
	fmt.Fprintf(&b, "kubevirt_plugins_launcher_hook_duration_seconds_bucket{hook_point=%q,plugin=%q,le=\"+Inf\"} %d\n", point, plugin, count)
	fmt.Fprintf(&b, "kubevirt_plugins_launcher_hook_duration_seconds_sum{hook_point=%q,plugin=%q} %s\n", point, plugin, sum)
	fmt.Fprintf(&b, "kubevirt_plugins_launcher_hook_duration_seconds_count{hook_point=%q,plugin=%q} %d\n", point, plugin, count)
	return b.String()
}

func compareTimes(t *testing.T, reg *prometheus.Registry, want string) {
	t.Helper()
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		launchermetrics.MetricHookDuration, launchermetrics.MetricHookOverlaps); err != nil {
		t.Fatal(err)
	}
}

// The launchers' hook durations add up, bucket by bucket, on one histogram
// per plugin and hook point, which is there empty for every declared point
// before any report; their overlaps add up per pair of plugins.
func TestReportedDurationsAndOverlapsAddUpOnTheNodesSeries(t *testing.T) {
	c, reg := newCounters(t, newPlugins(cel("cpu-tuning"), cel("tuned-again"), sidecar("late", pluginv1alpha1.PreBoot)))
	compareTimes(t, reg, durationsHeader+
		histogram("cpu-tuning", pluginv1alpha1.GuestDefinition, nil, 0, "0")+
		histogram("late", pluginv1alpha1.PreBoot, nil, 0, "0")+
		histogram("tuned-again", pluginv1alpha1.GuestDefinition, nil, 0, "0"))
	for _, r := range []struct{ vmi, data string }{
		{"web-01", `{"version":1,"durations":[{"plugin":"cpu-tuning","hookPoint":"GuestDefinition","runs":[1,2,0,0,0,0,0,0,0,0,0,0,0],"seconds":0.0025},
			{"plugin":"late","hookPoint":"PreBoot","runs":[0,0,0,0,0,0,0,0,0,0,0,0,1],"seconds":61}],
			"overlaps":[{"hookPoint":"GuestDefinition","plugin":"tuned-again","overwrittenPlugin":"cpu-tuning","count":2}]}`},
		{"web-02", `{"version":1,"durations":[{"plugin":"cpu-tuning","hookPoint":"GuestDefinition","runs":[0,0,0,0,0,1,0,0,0,0,0,0,0],"seconds":0.0625}],
			"overlaps":[{"hookPoint":"GuestDefinition","plugin":"tuned-again","overwrittenPlugin":"cpu-tuning","count":1}]}`},
	} {
		if err := c.Record(vmi(r.vmi), []byte(r.data)); err != nil {
			t.Fatalf("%s: %v", r.vmi, err)
		}
	}
	compareTimes(t, reg, durationsHeader+
		histogram("cpu-tuning", pluginv1alpha1.GuestDefinition, map[float64]int{.0005: 1, .001: 3, .1: 4}, 4, "0.065")+
		histogram("late", pluginv1alpha1.PreBoot, nil, 1, "61")+
		histogram("tuned-again", pluginv1alpha1.GuestDefinition, nil, 0, "0")+
		overlapsHeader+
		`kubevirt_plugins_launcher_hook_overlaps_total{hook_point="GuestDefinition",overwritten_plugin="cpu-tuning",plugin="tuned-again"} 3
`)
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", err, problems)
	}
}

// A report whose durations or overlaps name a Plugin virt-handler does not
// know is refused whole, and the durations and overlaps of a deleted Plugin
// are dropped, on either side of an overlap.
func TestDurationsAndOverlapsFollowThePlugins(t *testing.T) {
	src := newPlugins(cel("cpu-tuning"), cel("tuned-again"))
	c, reg := newCounters(t, src)
	for _, tc := range []struct{ data, want string }{
		{`{"version":1,"outcomes":[{"plugin":"cpu-tuning","hookPoint":"GuestDefinition","outcome":"success","count":1}],
			"durations":[{"plugin":"stranger","hookPoint":"GuestDefinition","runs":[1,0,0,0,0,0,0,0,0,0,0,0,0],"seconds":0}]}`,
			`durations[0].plugin: "stranger" is not a Plugin virt-handler knows`},
		{`{"version":1,"overlaps":[{"hookPoint":"GuestDefinition","plugin":"tuned-again","overwrittenPlugin":"stranger","count":1}]}`,
			`overlaps[0].overwrittenPlugin: "stranger" is not a Plugin virt-handler knows`},
		{`{"version":1,"overlaps":[{"hookPoint":"GuestDefinition","plugin":"stranger","overwrittenPlugin":"cpu-tuning","count":1}]}`,
			`overlaps[0].plugin: "stranger" is not a Plugin virt-handler knows`},
	} {
		if err := c.Record(vmi("web-01"), []byte(tc.data)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
	compare(t, reg, exposition(pair("cpu-tuning", pluginv1alpha1.GuestDefinition, nil), pair("tuned-again", pluginv1alpha1.GuestDefinition, nil)))
	compareTimes(t, reg, durationsHeader+
		histogram("cpu-tuning", pluginv1alpha1.GuestDefinition, nil, 0, "0")+
		histogram("tuned-again", pluginv1alpha1.GuestDefinition, nil, 0, "0"))

	if err := c.Record(vmi("web-01"), []byte(`{"version":1,
		"durations":[{"plugin":"tuned-again","hookPoint":"GuestDefinition","runs":[1,0,0,0,0,0,0,0,0,0,0,0,0],"seconds":0.0001}],
		"overlaps":[{"hookPoint":"GuestDefinition","plugin":"tuned-again","overwrittenPlugin":"cpu-tuning","count":1}]}`)); err != nil {
		t.Fatal(err)
	}
	src.set(cel("tuned-again"))
	compareTimes(t, reg, durationsHeader+histogram("tuned-again", pluginv1alpha1.GuestDefinition, map[float64]int{.0005: 1}, 1, "0.0001"))
}
