// SPDX-License-Identifier: Apache-2.0

// Package repo locates the repository checkout the tests run in, so that
// tests can load CRDs, manifests and scripts by their path in the repo.
package repo

import (
	"fmt"
	"os"
	"path/filepath"
)

// Root returns the directory holding go.work, searching upwards from the
// working directory of the test binary.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.work found above the working directory: the tests must run inside the repository")
		}
		dir = parent
	}
}

// Path joins elem to the repository root.
func Path(elem ...string) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	return filepath.Join(append([]string{root}, elem...)...), nil
}
