// SPDX-License-Identifier: Apache-2.0

package monitoring

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestShortenedRulesFireInAMinute: the copy the cluster scenario's
// Prometheus loads reads 1-minute windows and waits 15 s, and is otherwise
// the rules users install: promtool accepts it, and a sidecar failing every
// boot fires its alert within two minutes, which the rules as installed do
// not.
func TestShortenedRulesFireInAMinute(t *testing.T) {
	promtoolOrFail(t)
	files := ruleFiles(t)
	short := Shortened(files, "1m", "15s")
	for i, f := range short {
		for j, g := range f.Groups {
			for k, r := range g.Rules {
				orig := files[i].Groups[j].Rules[k]
				for _, m := range rangeSelector.FindAllString(r.Expr, -1) {
					if m != "[1m]" {
						t.Errorf("%s%s: range %s left", r.Alert, r.Record, m)
					}
				}
				if rangeSelector.ReplaceAllString(orig.Expr, "[1m]") != r.Expr || r.Alert != orig.Alert || r.Record != orig.Record ||
					!reflect.DeepEqual(r.Labels, orig.Labels) || !reflect.DeepEqual(r.Annotations, orig.Annotations) {
					t.Errorf("%s%s changed beyond its ranges: %+v", r.Alert, r.Record, r)
				}
				if (orig.For == "") != (r.For == "") || (r.For != "" && r.For != "15s") {
					t.Errorf("%s: for %q (was %q), want 15s", r.Alert, r.For, orig.For)
				}
			}
		}
	}
	dir := t.TempDir()
	paths, err := WriteRuleFiles(dir, short)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := CheckRules(t.Context(), paths...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	test := `rule_files:
- kubevirt-plugins.yaml
evaluation_interval: 5s
tests:
- interval: 5s
  input_series:
  - series: kubevirt_plugins_launcher_hook_outcomes_total{namespace="kubevirt",pod="virt-handler-x7k2p",plugin="smbios-watchdog",hook_point="GuestDefinition",outcome="error"}
    values: 0+1x40
  alert_rule_test:
  - eval_time: 90s
    alertname: KubeVirtPluginLauncherHookFailing
    exp_alerts:
    - exp_labels: {severity: warning, plugin: smbios-watchdog, hook_point: GuestDefinition}
      exp_annotations:
        description: 12 launcher hook runs of Plugin smbios-watchdog at hook point GuestDefinition failed in the last 10 minutes, and they have kept failing for 15 minutes. Each failure stops the boot or the migration of the VM it ran for.
        runbook_url: https://github.com/kubevirt-plugins/framework/blob/main/docs/runbooks/KubeVirtPluginLauncherHookFailing.md
        summary: Launcher hooks of Plugin smbios-watchdog keep failing at GuestDefinition.
`
	if err := os.WriteFile(filepath.Join(dir, "short_test.yaml"), []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := TestRules(t.Context(), dir, "short_test.yaml"); err != nil {
		t.Fatalf("the shortened rules:\n%s", out)
	}
	// The rules as installed stay quiet for the same 90 s.
	long := t.TempDir()
	if _, err := WriteRuleFiles(long, files); err != nil {
		t.Fatal(err)
	}
	quiet := strings.SplitN(test, "    exp_alerts:", 2)[0] + "    exp_alerts: []\n"
	if err := os.WriteFile(filepath.Join(long, "long_test.yaml"), []byte(quiet), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := TestRules(t.Context(), long, "long_test.yaml"); err != nil {
		t.Fatalf("the rules as installed:\n%s", out)
	}
}
