// SPDX-License-Identifier: Apache-2.0

// Package gobuild builds the project's commands for tests that run them as
// processes or put them in images: statically (CGO_ENABLED=0), as the
// images ship them.
package gobuild

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/kubevirt-plugins/framework/tests/framework/repo"
)

// Static builds the package pkg (for example "./cmd/label-syncer") of the
// module in the repository directory module (for example "label-syncer")
// into the file out.
func Static(module, pkg, out string) error {
	dir, err := repo.Path(module)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s in %s: %w\n%s", pkg, module, err, output)
	}
	return nil
}

// Binary is one command of the project, built at most once per test binary
// run, into a temporary directory that outlives the test that built it.
// Remove deletes it; call it from TestMain after the tests ran.
type Binary struct {
	// Module is the repository directory of the module, Pkg the package
	// in it, as for Static.
	Module, Pkg string

	once sync.Once
	dir  string
	path string
	err  error
}

// Path builds the binary on first use and returns its path. A failed
// build fails tb, and every later caller too.
func (b *Binary) Path(tb testing.TB) string {
	tb.Helper()
	b.once.Do(func() {
		b.dir, b.err = os.MkdirTemp("", "kvp-bin-")
		if b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, filepath.Base(b.Pkg))
		b.err = Static(b.Module, b.Pkg, b.path)
	})
	if b.err != nil {
		tb.Fatalf("building %s of %s: %v", b.Pkg, b.Module, b.err)
	}
	return b.path
}

// Remove deletes the built binary, if any.
func (b *Binary) Remove() {
	if b.dir != "" {
		_ = os.RemoveAll(b.dir)
	}
}
