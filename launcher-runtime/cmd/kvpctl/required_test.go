// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestRequiredReportsWhichRequiredPluginsWouldBeMissing: for a VMI file and
// Plugin files, one line per Plugin the VMI requires: ok, absent, invalid
// (the API server would refuse it) or not selecting the VMI; exit 1 when
// one would be missing, 0 when none would.
func TestRequiredReportsWhichRequiredPluginsWouldBeMissing(t *testing.T) {
	vmi := writeFile(t, "vmi.yaml", `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  namespace: prod
  name: db-0
  labels:
    tier: gold
  annotations:
    plugin.kubevirt.io/required: "disk-enc, audit, cpu-tuning, broken, tier-silver"
spec:
  domain:
    devices: {}
`)
	plugins := writeFile(t, "plugins.yaml", `apiVersion: plugin.kubevirt.io/v1alpha1
kind: Plugin
metadata:
  name: disk-enc
spec:
  condition: '"tier" in vmi.Labels'
  launcherHooks:
  - cel:
      hookPoint: GuestDefinition
      expression: 'Domain{}'
---
apiVersion: plugin.kubevirt.io/v1alpha1
kind: Plugin
metadata:
  name: broken
spec:
  launcherHooks:
  - cel:
      hookPoint: PreBoot
      expression: 'Domain{}'
---
apiVersion: plugin.kubevirt.io/v1alpha1
kind: Plugin
metadata:
  name: tier-silver
spec:
  condition: 'vmi.Labels["tier"] == "silver"'
  launcherHooks:
  - cel:
      hookPoint: GuestDefinition
      expression: 'Domain{}'
`)
	code, stdout, stderr := kvpctl(t, "required", "--vmi", vmi, "--plugins", plugins, "--plugins", testPlugins)
	t.Log("\n" + stdout + stderr)
	if code != exitError {
		t.Fatalf("exit %d, want 1: required Plugins would be missing", code)
	}
	for _, want := range [][2]string{
		{"disk-enc", "ok"},
		{"audit", "Missing: no Plugin of that name exists"},
		{"cpu-tuning", `NotSelected: its condition "\"example.com/tuning\" in vmi.Labels" is false for this VMI`},
		{"broken", "Missing: the Plugin does not validate, the API server would refuse it: spec.launcherHooks[0].cel.hookPoint"},
		{"tier-silver", `NotSelected: its condition "vmi.Labels[\"tier\"] == \"silver\"" is false for this VMI`},
	} {
		if !regexp.MustCompile(`(?m)^` + want[0] + ` +` + regexp.QuoteMeta(want[1])).MatchString(stdout) {
			t.Errorf("no line %s: %s", want[0], want[1])
		}
	}
	if !strings.Contains(stderr, "4 of the 5 Plugins VMI prod/db-0 requires would be missing: it would not start") {
		t.Errorf("stderr %q lacks the summary", stderr)
	}

	satisfied := writeFile(t, "ok.yaml", strings.Replace(mustRead(t, vmi), "disk-enc, audit, cpu-tuning, broken, tier-silver", "disk-enc", 1))
	if code, stdout, stderr := kvpctl(t, "required", "--vmi", satisfied, "--plugins", plugins); code != exitOK || !regexp.MustCompile(`(?m)^disk-enc +ok$`).MatchString(stdout) {
		t.Errorf("every required Plugin present and selecting: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, stdout, _ := kvpctl(t, "required", "--vmi", testVMI, "--plugins", plugins); code != exitOK || !strings.Contains(stdout, "requires no Plugin") {
		t.Errorf("VMI without the annotation: exit %d, %q", code, stdout)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
