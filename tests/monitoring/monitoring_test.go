// SPDX-License-Identifier: Apache-2.0

package monitoring

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kubevirt-plugins/framework/tests/framework/repo"
	"github.com/kubevirt-plugins/framework/tests/monitoring/metricsdoc"
)

// Series the rules and the dashboard read that the project's code does not
// register: each is a standard one, with where it comes from.
var standardSeries = map[string]string{
	"up": "Prometheus, one per scrape target",
	"apiserver_admission_webhook_rejection_count":          "kube-apiserver (k8s.io/apiserver/pkg/admission/metrics)",
	"certmanager_certificate_expiration_timestamp_seconds": "cert-manager, with deploy/cert-manager",
}

// Series the rules read that no code exposes yet, each with the change
// that would: the test fails once the code registers one, so that it
// leaves this list.
var proposedSeries = map[string]string{}

// runbookSections are the sections of a runbook, in order: KubeVirt's
// runbook shape.
var runbookSections = []string{"Meaning", "Impact", "Diagnosis", "Mitigation"}

var severities = []string{"critical", "warning", "info"}

func root(t *testing.T) string {
	t.Helper()
	r, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func ruleFiles(t *testing.T) []RuleFile {
	t.Helper()
	files, err := PrometheusRules(root(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func promtoolOrFail(t *testing.T) {
	t.Helper()
	if _, err := Promtool(); err != nil {
		t.Fatal(err)
	}
}

// TestRulesPassPromtoolCheck fails on a rule promtool refuses: PromQL that
// does not parse, a bad duration, a template that does not compile.
func TestRulesPassPromtoolCheck(t *testing.T) {
	promtoolOrFail(t)
	dir := t.TempDir()
	paths, err := WriteRuleFiles(dir, ruleFiles(t))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := CheckRules(t.Context(), paths...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// unitTestFile is the part of a promtool unit test file the test reads.
type unitTestFile struct {
	RuleFiles []string `json:"rule_files"`
	Tests     []struct {
		Name          string `json:"name"`
		AlertRuleTest []struct {
			EvalTime  string           `json:"eval_time"`
			AlertName string           `json:"alertname"`
			ExpAlerts []map[string]any `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// TestEveryAlertHasPassingUnitTests fails when an alert has no unit test
// file, when its file lacks a group that fires it or a group where a blip
// or a healthy series leaves it quiet, and when promtool test rules fails
// on any file: an alert that does not fire on what should fire it, or
// fires on a blip or on a healthy series.
func TestEveryAlertHasPassingUnitTests(t *testing.T) {
	promtoolOrFail(t)
	r := root(t)
	files := ruleFiles(t)
	dir := t.TempDir()
	written, err := WriteRuleFiles(dir, files)
	if err != nil {
		t.Fatal(err)
	}
	testsDir := filepath.Join(r, "deploy", "monitoring", "tests")
	var tests []string
	for _, a := range Alerts(files) {
		name := a.Alert + ".yaml"
		b, err := os.ReadFile(filepath.Join(testsDir, name))
		if err != nil {
			t.Errorf("alert %s has no promtool unit test: %v", a.Alert, err)
			continue
		}
		var f unitTestFile
		if err := yaml.Unmarshal(b, &f); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		// promtool only warns about a rule file it does not find.
		for _, rf := range f.RuleFiles {
			if !slices.Contains(written, filepath.Join(dir, rf)) {
				t.Errorf("%s: rule file %s is none of the PrometheusRules (%v)", name, rf, written)
			}
		}
		// A group counts for the alert only if it evaluates it.
		fires, blip, healthy := false, false, false
		for _, g := range f.Tests {
			for _, at := range g.AlertRuleTest {
				if at.AlertName != a.Alert {
					continue
				}
				switch {
				case strings.HasPrefix(g.Name, "fires") && len(at.ExpAlerts) > 0:
					fires = true
				case strings.HasPrefix(g.Name, "blip") && len(at.ExpAlerts) == 0:
					blip = true
				case strings.HasPrefix(g.Name, "healthy") && len(at.ExpAlerts) == 0:
					healthy = true
				}
			}
		}
		if !fires || !blip || !healthy {
			t.Errorf("%s: want test groups named fires… (expecting %s), blip… and healthy… (expecting no alert); have fires=%v blip=%v healthy=%v",
				name, a.Alert, fires, blip, healthy)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		tests = append(tests, name)
	}
	entries, err := os.ReadDir(testsDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !slices.Contains(tests, e.Name()) {
			t.Errorf("%s tests no alert of the rules: rename or remove it", filepath.Join(testsDir, e.Name()))
		}
	}
	if len(tests) == 0 {
		t.Fatal("no unit test to run")
	}
	if out, err := TestRules(t.Context(), dir, tests...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// TestAlertsAndRunbooksLineUp fails when an alert has no runbook, a
// runbook has no alert, or a runbook is not in the runbook shape.
func TestAlertsAndRunbooksLineUp(t *testing.T) {
	dir := filepath.Join(root(t), "docs", "runbooks")
	var alerts []string
	for _, a := range Alerts(ruleFiles(t)) {
		if slices.Contains(alerts, a.Alert) {
			t.Errorf("alert %s is defined twice", a.Alert)
		}
		alerts = append(alerts, a.Alert)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var runbooks []string
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".md")
		if !ok {
			t.Errorf("docs/runbooks/%s is not a runbook (<AlertName>.md)", e.Name())
			continue
		}
		runbooks = append(runbooks, name)
		if !slices.Contains(alerts, name) {
			t.Errorf("docs/runbooks/%s has no alert of that name", e.Name())
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		checkRunbookShape(t, name, string(b))
	}
	for _, a := range alerts {
		if !slices.Contains(runbooks, a) {
			t.Errorf("alert %s has no runbook docs/runbooks/%s.md", a, a)
		}
	}
}

var heading = regexp.MustCompile(`(?m)^(#{1,2}) (.+)$`)

func checkRunbookShape(t *testing.T, name, text string) {
	t.Helper()
	var title string
	var sections []string
	for _, m := range heading.FindAllStringSubmatch(outsideCode(text), -1) {
		if m[1] == "#" {
			if title != "" {
				t.Errorf("runbook %s has more than one title", name)
			}
			title = m[2]
			continue
		}
		sections = append(sections, m[2])
	}
	if title != name {
		t.Errorf("runbook %s: title %q, want the alert's name", name, title)
	}
	if !slices.Equal(sections, runbookSections) {
		t.Errorf("runbook %s: sections %q, want %q", name, sections, runbookSections)
	}
	_, diagnosis, ok := strings.Cut(text, "\n## Diagnosis\n")
	if !ok {
		return
	}
	diagnosis, _, _ = strings.Cut(diagnosis, "\n## Mitigation\n")
	for _, s := range []string{"kubectl ", "```promql"} {
		if !strings.Contains(diagnosis, s) {
			t.Errorf("runbook %s: the diagnosis has no %q: give the exact commands and queries to run", name, s)
		}
	}
}

// outsideCode returns text without its fenced code blocks, whose shell
// comments would read as headings.
func outsideCode(text string) string {
	var b strings.Builder
	in := false
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, "```") {
			in = !in
			continue
		}
		if !in {
			b.WriteString(line)
		}
	}
	return b.String()
}

// TestEveryAlertHasSeverityAndAnnotations fails on an alert without a
// severity label of critical, warning or info, without a summary or a
// description, or whose runbook_url does not end in its runbook's path;
// and on an alert that does not wait (for:) before firing.
func TestEveryAlertHasSeverityAndAnnotations(t *testing.T) {
	for _, a := range Alerts(ruleFiles(t)) {
		if !slices.Contains(severities, a.Labels["severity"]) {
			t.Errorf("%s: severity %q, want one of %v", a.Alert, a.Labels["severity"], severities)
		}
		for _, k := range []string{"summary", "description", "runbook_url"} {
			if strings.TrimSpace(a.Annotations[k]) == "" {
				t.Errorf("%s has no %s annotation", a.Alert, k)
			}
		}
		if u := a.Annotations["runbook_url"]; !strings.HasPrefix(u, "https://") || !strings.HasSuffix(u, "/docs/runbooks/"+a.Alert+".md") {
			t.Errorf("%s: runbook_url %q does not point to docs/runbooks/%s.md", a.Alert, u, a.Alert)
		}
		if a.For == "" {
			t.Errorf("%s has no for: one bad evaluation would page", a.Alert)
		}
	}
}

// TestDashboardQueriesParse fails on a panel without a query and on a
// query promtool does not parse.
func TestDashboardQueriesParse(t *testing.T) {
	promtoolOrFail(t)
	panels, err := DashboardPanels(filepath.Join(root(t), DashboardPath))
	if err != nil {
		t.Fatal(err)
	}
	if len(panels) == 0 {
		t.Fatal("the dashboard has no panel")
	}
	for _, p := range panels {
		if len(p.Exprs) == 0 || slices.Contains(p.Exprs, "") {
			t.Errorf("panel %q has a target without a query", p.Title)
		}
	}
	paths, err := WriteRuleFiles(t.TempDir(), []RuleFile{DashboardRuleFile(panels)})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := CheckRules(t.Context(), paths...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// TestRulesAndDashboardReadOnlySeriesThatExist fails when a rule or a
// panel reads a series nothing exposes: not registered by the code
// (metricsdoc), not a recording rule of the components, not a standard
// series.
func TestRulesAndDashboardReadOnlySeriesThatExist(t *testing.T) {
	sources, err := metricsdoc.Inventory()
	if err != nil {
		t.Fatal(err)
	}
	files := ruleFiles(t)
	known := append(metricsdoc.Names(sources), Records(files)...)
	for name, change := range proposedSeries {
		if slices.Contains(known, name) {
			t.Errorf("%s is registered now: remove it from proposedSeries (%s)", name, change)
		}
	}
	check := func(where, expr string) {
		names, err := MetricNames(expr)
		if err != nil {
			t.Errorf("%s: %v", where, err)
			return
		}
		for _, n := range names {
			_, standard := standardSeries[n]
			_, proposed := proposedSeries[n]
			if !slices.Contains(known, n) && !standard && !proposed {
				t.Errorf("%s reads %s, which no code registers, no recording rule records and no standard source exposes", where, n)
			}
		}
	}
	var read []string
	for _, f := range files {
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				check("rule "+r.Alert+r.Record, r.Expr)
				names, _ := MetricNames(r.Expr)
				read = append(read, names...)
			}
		}
	}
	panels, err := DashboardPanels(filepath.Join(root(t), DashboardPath))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range panels {
		for _, e := range p.Exprs {
			check("panel "+p.Title, e)
		}
	}
	for n := range proposedSeries {
		if slices.Contains(read, n) {
			t.Logf("rules read %s, which the code does not expose yet: %s", n, proposedSeries[n])
		}
	}
}

func TestMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`sum by (plugin, hook_point) (increase(a_total{outcome="error", x=~"b|c"}[10m])) > 0`:  {"a_total"},
		`histogram_quantile(0.95, sum by (le) (rate(b_bucket[5m]))) - time() < 14 * 24 * 3600`: {"b_bucket"},
		"a:b:c > 0.5 * (d or a:b:c * 0)\n# up here is a comment":                               {"a:b:c", "d"},
		`x unless on (namespace, pod) y > 0 and ignoring(z) group_left w offset 1h`:            {"x", "y", "w"},
		`sum(up{pod=~"p-.+", q="}"}) or vector(0)`:                                             {"up"},
	} {
		got, err := MetricNames(expr)
		if err != nil {
			t.Errorf("%q: %v", expr, err)
			continue
		}
		if !slices.Equal(got, want) {
			t.Errorf("MetricNames(%q) = %q, want %q", expr, got, want)
		}
	}
}

// TestMonitoringIsAComponentDeployLeavesOut fails when deploy/ brings in
// a Prometheus Operator object (a cluster without the Operator would
// refuse the whole apply) or when the components do not build onto the
// kustomizations they are for.
func TestMonitoringIsAComponentDeployLeavesOut(t *testing.T) {
	r := root(t)
	kinds := func(withComponents bool) []string {
		objs, err := Build(r, t.TempDir(), withComponents)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, o := range objs {
			if strings.HasPrefix(o.GetAPIVersion(), "monitoring.coreos.com/") {
				out = append(out, o.GetKind()+"/"+o.GetName())
			}
		}
		slices.Sort(out)
		return out
	}
	if got := kinds(false); len(got) != 0 {
		t.Errorf("deploy/ and deploy/label-syncer bring in %v without the monitoring components", got)
	}
	want := []string{"PrometheusRule/kubevirt-plugins", "PrometheusRule/kubevirt-plugins-label-syncer",
		"ServiceMonitor/label-syncer", "ServiceMonitor/plugin-controller"}
	if got := kinds(true); !slices.Equal(got, want) {
		t.Errorf("with the components: %v, want %v", got, want)
	}
	for _, c := range Components {
		b, err := os.ReadFile(filepath.Join(r, c.Dir, "kustomization.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte("\nkind: Component\n")) {
			t.Errorf("%s/kustomization.yaml is not a kustomize Component", c.Dir)
		}
	}
}

// TestMetricsDocIsCurrent fails when docs/metrics.md is not what
// cmd/metricsdoc writes: run make generate-metrics-doc.
func TestMetricsDocIsCurrent(t *testing.T) {
	sources, err := metricsdoc.Inventory()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root(t), "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := metricsdoc.Markdown(sources); !bytes.Equal(got, want) {
		t.Errorf("docs/metrics.md is stale: run make generate-metrics-doc and commit it")
	}
}

// TestMetricsDocLinksWhatTheControllersLink fails when a controller links
// a package of controller-runtime that registers metrics and metricsdoc
// does not, so its series would be missing from docs/metrics.md.
func TestMetricsDocLinksWhatTheControllersLink(t *testing.T) {
	r := root(t)
	registering := regexp.MustCompile(`^sigs\.k8s\.io/controller-runtime/pkg/(.+/)?metrics$`)
	deps := func(dir, pkg string) []string {
		cmd := exec.CommandContext(t.Context(), "go", "list", "-deps", pkg)
		cmd.Dir = filepath.Join(r, dir)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		var pkgs []string
		for p := range strings.FieldsSeq(string(out)) {
			if registering.MatchString(p) {
				pkgs = append(pkgs, p)
			}
		}
		return pkgs
	}
	doc := deps("tests", "./monitoring/metricsdoc")
	for _, c := range [][2]string{{"plugin-controller", "./cmd/plugin-controller"}, {"label-syncer", "./cmd/label-syncer"}} {
		for _, p := range deps(c[0], c[1]) {
			if !slices.Contains(doc, p) {
				t.Errorf("%s links %s, which metricsdoc does not: import there the package of controller-runtime that brings it in", c[0], p)
			}
		}
	}
}
