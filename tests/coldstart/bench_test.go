// SPDX-License-Identifier: Apache-2.0

package coldstart

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt-plugins/framework/api/celenv"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/handler-runtime/launcherplugins"
	"github.com/kubevirt-plugins/framework/tests/coldstart/internal/probe"
	"github.com/kubevirt-plugins/framework/tests/framework/gobuild"
	"github.com/kubevirt-plugins/framework/tests/framework/repo"
)

// hookExpression is the first CEL hook of the comparison, the Plugins user
// guide's example; hookCondition a plugin condition that holds for the
// VMI, for the case of a hook with a condition.
const (
	hookExpression = `Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`
	hookCondition  = `vmi.Labels["special"] == "vmi-fedora"`
)

// defaultRounds is how many times each case runs unless COLDSTART_ROUNDS
// says otherwise.
const defaultRounds = 15

// coldCase is one measured process: a driver, its case and the plugins file
// it is handed.
type coldCase struct {
	name    string
	driver  string // "framework" or "upstream"
	arg     string
	plugins string // a key of the plugins files
}

var coldCases = []coldCase{
	{"launcher, no Plugin", "framework", "launcher", "none"},
	{"launcher, first CEL hook", "framework", "launcher", "hook"},
	{"launcher, first CEL hook and a plugin condition", "framework", "launcher", "conditional"},
	{"launcher, first CEL hook, text only (an older virt-handler)", "framework", "launcher", "hook-text"},
	{"handler, no node hook selects the VMI", "framework", "handler", "store"},
	{"upstream, first CEL hook", "upstream", "hook", "hook-text"},
	{"upstream, first CEL hook and a plugin condition", "upstream", "hook", "conditional-text"},
	{"upstream, environment alone", "upstream", "env", "hook-text"},
	{"cel-go, bare environment, x + 1 > 2", "upstream", "bare", "hook-text"},
}

// BenchmarkColdStart runs each case in a fresh process, COLDSTART_ROUNDS
// times (default 15), the cases interleaved round by round (each round in
// another order) so that load on the machine falls on all of them alike.
// Every process loads its inputs first (KubeVirt's generated domain, the
// VMI, the plugins as virt-handler hands them over), then measures its work
// once, in the process: wall time, CPU time and the growth of VmRSS. The
// sub-benchmarks report, per case, the median and the spread (min, max);
// ns/op is the median wall time.
func BenchmarkColdStart(b *testing.B) {
	domain := sharedFixture(b, "domain_x86_64.xml")
	vmi := sharedFixture(b, "vmi-fedora.yaml")
	rounds := defaultRounds
	if s := os.Getenv("COLDSTART_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("COLDSTART_ROUNDS=%q: want a positive number", s)
		}
		rounds = n
	}
	dir := b.TempDir()
	drivers := map[string]string{}
	for _, d := range []string{"framework", "upstream"} {
		drivers[d] = filepath.Join(dir, d+"-driver")
		if err := gobuild.Static("tests", "./coldstart/cmd/"+d+"-driver", drivers[d]); err != nil {
			b.Fatal(err)
		}
	}
	pluginFiles := writePluginFiles(b, dir)

	results := map[string][]probe.Result{}
	for r := range rounds {
		for i := range coldCases {
			c := coldCases[(i+r)%len(coldCases)]
			res := runCase(b, drivers[c.driver], c.arg, domain, vmi, pluginFiles[c.plugins])
			results[c.name] = append(results[c.name], res)
		}
	}

	var table strings.Builder
	fmt.Fprintf(&table, "\n%d fresh processes per case, interleaved; median (min to max)\n\n", rounds)
	fmt.Fprintln(&table, "| case | wall time | CPU time | RSS growth |")
	fmt.Fprintln(&table, "|---|---:|---:|---:|")
	for _, c := range coldCases {
		s := spreads(results[c.name])
		fmt.Fprintf(&table, "| %s | %.2f ms (%.2f to %.2f) | %.2f ms (%.2f to %.2f) | %+d KiB (%+d to %+d) |\n", c.name,
			ms(s.wall.median), ms(s.wall.min), ms(s.wall.max), ms(s.cpu.median), ms(s.cpu.min), ms(s.cpu.max),
			s.rss.median, s.rss.min, s.rss.max)
	}
	fmt.Fprintln(&table)
	for _, what := range []string{"first CEL hook", "first CEL hook and a plugin condition"} {
		ours, theirs := spreads(results["launcher, "+what]), spreads(results["upstream, "+what])
		fmt.Fprintf(&table, "%s against upstream, ratio of medians: wall time %.2fx, CPU time %.2fx, RSS growth %.2fx\n", what,
			float64(ours.wall.median)/float64(theirs.wall.median), float64(ours.cpu.median)/float64(theirs.cpu.median),
			float64(ours.rss.median)/float64(theirs.rss.median))
	}
	// Printed, not logged: make bench runs without -v.
	fmt.Print(table.String())

	for _, c := range coldCases {
		b.Run(c.name, func(b *testing.B) {
			s := spreads(results[c.name])
			b.ReportMetric(float64(s.wall.median), "ns/op")
			b.ReportMetric(ms(s.wall.min), "ms-min")
			b.ReportMetric(ms(s.wall.max), "ms-max")
			b.ReportMetric(ms(s.cpu.median), "cpu-ms")
			b.ReportMetric(float64(s.rss.median), "KiB-rss")
			b.ReportMetric(float64(s.rss.min), "KiB-rss-min")
			b.ReportMetric(float64(s.rss.max), "KiB-rss-max")
		})
	}
}

// writePluginFiles writes what the drivers are handed: the plugins as this
// project's virt-handler hands them to a launcher, the checked forms of
// their expressions included (none, one Plugin with the CEL hook, the same
// Plugin with a condition), the same without checked forms (as an older
// virt-handler, and for the upstream-shaped driver), and the Plugins a
// virt-handler's store holds (the CEL hook's and one with a node hook at
// another hook point than the one dispatched).
func writePluginFiles(b *testing.B, dir string) map[string]string {
	hook := &pluginv1alpha1.Plugin{
		ObjectMeta: metav1.ObjectMeta{Name: "cpu-tuning", Generation: 1},
		Spec: pluginv1alpha1.PluginSpec{LauncherHooks: []pluginv1alpha1.LauncherHook{{
			CEL: &pluginv1alpha1.CELHook{HookPoint: pluginv1alpha1.GuestDefinition, Expression: hookExpression},
		}}},
	}
	recorder := &pluginv1alpha1.Plugin{
		ObjectMeta: metav1.ObjectMeta{Name: "stop-recorder", Generation: 1},
		Spec: pluginv1alpha1.PluginSpec{NodeHooks: []pluginv1alpha1.NodeHook{{
			Socket:         "/var/run/kubevirt/stop-recorder/hook.sock",
			PermittedHooks: []pluginv1alpha1.NodeHookPoint{pluginv1alpha1.PostVMStop},
		}}},
	}
	files := map[string]string{}
	write := func(key string, data []byte) {
		files[key] = filepath.Join(dir, key+".json")
		if err := os.WriteFile(files[key], data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	conditional := hook.DeepCopy()
	conditional.Spec.Condition = hookCondition
	env, err := celenv.New(celenv.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for key, plugins := range map[string][]*pluginv1alpha1.Plugin{"none": nil, "hook": {hook}, "conditional": {conditional}} {
		checked, err := launcherplugins.EncodeChecked(plugins, env)
		if err != nil {
			b.Fatal(err)
		}
		write(key, checked.Data)
		text, err := launcherplugins.Encode(plugins)
		if err != nil {
			b.Fatal(err)
		}
		write(key+"-text", text.Data)
	}
	stored, err := json.Marshal(pluginv1alpha1.PluginList{Items: []pluginv1alpha1.Plugin{*hook, *recorder}})
	if err != nil {
		b.Fatal(err)
	}
	write("store", stored)
	return files
}

// runCase runs one driver process and returns its measurement.
func runCase(b *testing.B, driver, arg string, inputs ...string) probe.Result {
	cmd := exec.Command(driver, append([]string{arg}, inputs...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s %s: %v\n%s", filepath.Base(driver), arg, err, stderr.String())
	}
	var res probe.Result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		b.Fatalf("%s %s: reading %q: %v", filepath.Base(driver), arg, stdout.String(), err)
	}
	return res
}

type spread[T int64 | time.Duration] struct{ median, min, max T }

func spreadOf[T int64 | time.Duration](xs []T) spread[T] {
	s := slices.Clone(xs)
	slices.Sort(s)
	return spread[T]{median: s[len(s)/2], min: s[0], max: s[len(s)-1]}
}

// caseSpreads are the spreads of one case's measurements.
type caseSpreads struct {
	wall, cpu spread[time.Duration]
	rss       spread[int64]
}

func spreads(rs []probe.Result) caseSpreads {
	walls := make([]time.Duration, len(rs))
	cpus := make([]time.Duration, len(rs))
	growths := make([]int64, len(rs))
	for i, r := range rs {
		walls[i], cpus[i], growths[i] = time.Duration(r.WallNS), time.Duration(r.CPUNS), r.RSSGrowthKiB
	}
	return caseSpreads{wall: spreadOf(walls), cpu: spreadOf(cpus), rss: spreadOf(growths)}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// sharedFixture returns the path of a fixture in ../shared/fixtures next to
// the repository, or skips.
func sharedFixture(b *testing.B, name string) string {
	path, err := repo.Path("..", "shared", "fixtures", name)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		b.Skipf("shared fixture %s: %v", name, err)
	}
	return path
}
