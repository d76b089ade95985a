// SPDX-License-Identifier: Apache-2.0

// Package examples ships Plugin manifests with the outcome each must have:
// the five examples of the user guide, which are valid, and invalid Plugins,
// each annotated with the field and the message its rejection must name.
// The same cases drive the pure-Go validation tests and the tests against a
// real API server, so the two stay in step.
package examples

import (
	"bufio"
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

//go:embed valid/*.yaml invalid/*.yaml
var files embed.FS

// Case is one Plugin manifest.
type Case struct {
	// Name is the file name without .yaml.
	Name string
	// YAML is the manifest.
	YAML []byte
	// Field is the field path the rejection names; empty for valid cases.
	Field string
	// Message is a part of the rejection message; may be empty.
	Message string
}

// Valid returns the user guide's examples.
func Valid() ([]Case, error) { return load("valid") }

// Invalid returns Plugins that must be rejected.
func Invalid() ([]Case, error) { return load("invalid") }

func load(dir string) ([]Case, error) {
	entries, err := fs.ReadDir(files, dir)
	if err != nil {
		return nil, err
	}
	var out []Case
	for _, e := range entries {
		data, err := files.ReadFile(path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		c := Case{Name: strings.TrimSuffix(e.Name(), ".yaml"), YAML: data}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "#") {
				break
			}
			if v, ok := strings.CutPrefix(line, "# field: "); ok {
				c.Field = v
			}
			if v, ok := strings.CutPrefix(line, "# message: "); ok {
				c.Message = v
			}
		}
		if dir == "invalid" && c.Field == "" {
			return nil, fmt.Errorf("%s: an invalid case must say which field its rejection names", e.Name())
		}
		out = append(out, c)
	}
	return out, nil
}
