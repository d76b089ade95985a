// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubevirt-plugins/framework/api/sidecarinjection"
)

const testSidecar = `plugin: my-plugin
label: plugins.example.com/my-plugin
image: example.com/my-plugin:v1
args: ["--plugin-name=my-plugin"]
`

func TestInjectionPolicyWritesThePolicyOfTheDescription(t *testing.T) {
	file := writeFile(t, "sidecar.yaml", testSidecar)
	code, stdout, stderr := kvpctl(t, "injection-policy", file)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	s, err := sidecarinjection.Parse([]byte(testSidecar))
	if err != nil {
		t.Fatal(err)
	}
	if want := s.Policy("sidecar.yaml"); stdout != want {
		t.Errorf("stdout is not the description's policy:\n%s", stdout)
	}
	out := filepath.Join(t.TempDir(), "policy.yaml")
	if code, _, stderr := kvpctl(t, "injection-policy", "-o", out, file); code != exitOK {
		t.Fatalf("-o: exit %d: %s", code, stderr)
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != stdout {
		t.Errorf("-o wrote %q (%v), want what stdout had", b, err)
	}
}

func TestInjectionPolicyRefusesAnInvalidDescriptionNamingTheField(t *testing.T) {
	file := writeFile(t, "sidecar.yaml", strings.Replace(testSidecar, "image: example.com/my-plugin:v1\n", "", 1))
	out := filepath.Join(t.TempDir(), "policy.yaml")
	code, stdout, stderr := kvpctl(t, "injection-policy", "-o", out, file)
	if code != exitError || !strings.Contains(stderr, "sidecar.yaml: image: required") || stdout != "" {
		t.Errorf("exit %d, stderr %q, want 1 naming the file and the field", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("an invalid description wrote %s", out)
	}
	if code, _, stderr := kvpctl(t, "injection-policy"); code != exitUsage || !strings.Contains(stderr, "name one sidecar description") {
		t.Errorf("no file: exit %d, stderr %q, want a usage error", code, stderr)
	}
}
