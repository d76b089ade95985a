// SPDX-License-Identifier: Apache-2.0

// Package release checks hack/release.sh on a throwaway clone: modules are
// tagged <dir>/vX.Y.Z the Go way, bottom-up, with sibling requirements at
// released versions and without replace directives.
package release

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubevirt-plugins/framework/tests/framework/repo"
)

func run(t *testing.T, dir string, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func clone(t *testing.T) string {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "clone")
	if out, err := run(t, root, "git", "clone", "-q", "--no-hardlinks", root, dir); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	return dir
}

func TestReleaseTagsModulesBottomUp(t *testing.T) {
	dir := clone(t)
	for _, m := range []string{"api", "protos", "launcher-runtime"} {
		if out, err := run(t, dir, "hack/release.sh", m, "v0.1.0"); err != nil {
			t.Fatalf("release %s: %v\n%s", m, err, out)
		}
	}
	tags, _ := run(t, dir, "git", "tag", "--list")
	for _, want := range []string{"api/v0.1.0", "protos/v0.1.0", "launcher-runtime/v0.1.0"} {
		if !strings.Contains(tags, want) {
			t.Fatalf("tag %s missing; tags: %s", want, tags)
		}
	}
	released, err := run(t, dir, "git", "show", "launcher-runtime/v0.1.0:launcher-runtime/go.mod")
	if err != nil {
		t.Fatalf("%v\n%s", err, released)
	}
	for _, want := range []string{"github.com/kubevirt-plugins/framework/api v0.1.0", "github.com/kubevirt-plugins/framework/protos v0.1.0"} {
		if !strings.Contains(released, want) {
			t.Fatalf("released go.mod does not require %q:\n%s", want, released)
		}
	}
	if strings.Contains(released, "=> ../") {
		t.Fatalf("released go.mod keeps a replace to a sibling directory:\n%s", released)
	}
	head, _ := run(t, dir, "git", "show", "HEAD:launcher-runtime/go.mod")
	if !strings.Contains(head, "=> ../api") {
		t.Fatalf("main must keep developing against the sibling directories:\n%s", head)
	}
}

func TestReleaseRefusesModuleWithUnreleasedSibling(t *testing.T) {
	dir := clone(t)
	out, err := run(t, dir, "hack/release.sh", "tests", "v0.1.0")
	if err == nil || !strings.Contains(out, "tests is not released") {
		t.Fatalf("releasing tests: want a refusal, got %v\n%s", err, out)
	}
	out, err = run(t, dir, "hack/release.sh", "launcher-runtime", "v0.1.0")
	if err == nil || !strings.Contains(out, "has no release") {
		t.Fatalf("releasing launcher-runtime before api: want a refusal naming the sibling, got %v\n%s", err, out)
	}
	out, err = run(t, dir, "hack/release.sh", "api", "1.0")
	if err == nil || !strings.Contains(out, "not a semantic version") {
		t.Fatalf("bad version: want a refusal, got %v\n%s", err, out)
	}
}
