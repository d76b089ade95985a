// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrometheusConfigPassesPromtool: Debian's promtool, the same build as
// the scenario's Prometheus, accepts promConfig (with the Pod's files at
// temporary paths: it opens them), so a key that build does not know,
// such as kubernetes_sd_configs, fails here and not on the cluster.
func TestPrometheusConfigPassesPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool (Debian's prometheus package, make setup installs it): %v", err)
	}
	dir := t.TempDir()
	for _, f := range []string{"sa/token", "sa/ca.crt", "rules/x.yaml", "targets/kubevirt-plugins.json", "targets/virt-handler.json", "targets/apiserver.json"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		content := "x"
		switch filepath.Ext(f) {
		case ".json":
			content = "[]"
		case ".yaml":
			content = "groups: []"
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := strings.NewReplacer(
		"/var/run/secrets/kubernetes.io/serviceaccount/", dir+"/sa/",
		"/etc/prometheus-rules/", dir+"/rules/",
		"/etc/prometheus-targets/", dir+"/targets/",
	).Replace(promConfig)
	p := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(t.Context(), promtool, "check", "config", p).CombinedOutput(); err != nil {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
}
