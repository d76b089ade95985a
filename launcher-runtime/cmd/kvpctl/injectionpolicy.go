// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kubevirt-plugins/framework/api/sidecarinjection"
)

const injectionPolicySynopsis = "injection-policy SIDECAR.yaml [-o FILE]  write the MutatingAdmissionPolicy that injects the sidecar a description names"

// runInjectionPolicy renders a sidecar description (api/sidecarinjection)
// as its MutatingAdmissionPolicy and binding, on stdout or into -o. A
// description with problems writes nothing and lists them by field.
func runInjectionPolicy(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("injection-policy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "write the policy into this file instead of stdout")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usagef("%s", err)
	}
	if fs.NArg() != 1 {
		return usagef("name one sidecar description")
	}
	file := fs.Arg(0)
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	s, err := sidecarinjection.Parse(data)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	policy := s.Policy(filepath.Base(file))
	if *out == "" {
		_, err = io.WriteString(stdout, policy)
		return err
	}
	return os.WriteFile(*out, []byte(policy), 0o644)
}
