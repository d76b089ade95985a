// Package gobuild builds the project's commands for tests that run them as
// processes or put them in images: statically (CGO_ENABLED=0), as the
// images ship them.
package gobuild

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

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
