// SPDX-License-Identifier: Apache-2.0

// Package template follows the template sidecar's README as a new plugin
// author would: it copies the template into a module of its own with the
// README's commands, builds it, and runs its tests, which include the SDK's
// contract checks over a real socket.
package template

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kubevirt-plugins/framework/tests/framework/repo"
)

// section returns the first shell block after the heading.
func section(t *testing.T, readme, heading string) string {
	t.Helper()
	i := strings.Index(readme, heading)
	if i < 0 {
		t.Fatalf("README has no %q section", heading)
	}
	m := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(readme[i:])
	if m == nil {
		t.Fatalf("no shell block under %q", heading)
	}
	return m[1]
}

func TestTemplateREADMEMakesAWorkingPluginOfYourOwn(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module from scratch; not in -short")
	}
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "sample-sidecars", "template", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	steps := section(t, readme, "## Copy it into a module of your own")
	local := section(t, readme, "To build against a local checkout")

	// The framework is not released from this checkout: take the README's
	// own alternative to `go get ...@latest`, pointed at this checkout.
	local = strings.ReplaceAll(local, "/path/to/framework", root)
	var script []string
	for line := range strings.SplitSeq(steps, "\n") {
		switch {
		case strings.HasPrefix(line, "go get github.com/kubevirt-plugins/framework/protos"):
			script = append(script, local)
		case strings.HasPrefix(line, "docker build"):
			// Images are built and run by the other integration tests.
		default:
			script = append(script, line)
		}
	}
	home := t.TempDir()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", strings.Join(script, "\n"))
	cmd.Dir = root
	// A home of its own, but the machine's build and module caches, as an
	// author's own machine has them: an empty build cache under the new
	// home would compile the standard library and every dependency again
	// (minutes), which tests nothing of the template.
	cmd.Env = append(os.Environ(), "HOME="+home, "GOWORK=off", "GOFLAGS=-mod=mod")
	cmd.Env = append(cmd.Env, goEnv(t, "GOCACHE", "GOMODCACHE")...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("following the README failed: %v\n%s", err, out)
	}
	bin := filepath.Join(home, "my-plugin", "bin", "my-plugin")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the README's build did not produce %s: %v\n%s", bin, err, out)
	}
	if !strings.Contains(string(out), "ok  \texample.com/my-plugin") {
		t.Fatalf("the copied plugin's tests did not run and pass:\n%s", out)
	}
}

// goEnv returns NAME=value for each go env variable named, as this
// process's go command has them.
func goEnv(t *testing.T, names ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"env"}, names...)...).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", strings.Join(names, " "), err)
	}
	values := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(values) != len(names) {
		t.Fatalf("go env %s printed %d lines, want %d", strings.Join(names, " "), len(values), len(names))
	}
	env := make([]string, len(names))
	for i, name := range names {
		env[i] = name + "=" + values[i]
	}
	return env
}
