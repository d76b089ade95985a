// SPDX-License-Identifier: Apache-2.0

package monitoring

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
)

// Promtool returns the path of promtool, or an error saying how to get it.
func Promtool() (string, error) {
	p, err := exec.LookPath("promtool")
	if err != nil {
		return "", errors.New("promtool is not installed: make setup installs it (Debian package prometheus)")
	}
	return p, nil
}

// CheckRules runs promtool check rules on files.
func CheckRules(ctx context.Context, files ...string) (string, error) {
	return promtool(ctx, "", append([]string{"check", "rules"}, files...)...)
}

// TestRules runs promtool test rules on the unit test files, in dir (the
// directory their rule_files are relative to).
func TestRules(ctx context.Context, dir string, files ...string) (string, error) {
	return promtool(ctx, dir, append([]string{"test", "rules"}, files...)...)
}

func promtool(ctx context.Context, dir string, args ...string) (string, error) {
	p, err := Promtool()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, p, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("promtool %v: %w", args, err)
	}
	return string(out), nil
}
