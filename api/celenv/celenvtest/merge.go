// SPDX-License-Identifier: Apache-2.0

// Package celenvtest reads the merge rule cases of package celenv
// (api/celenv/testdata/merge), so that the rule tests of celenv and the
// libvirt definition tests of launcher-runtime/domainrun run the same
// expressions and expect the same domains.
//
// A case file, <Rule>.txtar (the txtar layout: a text, then sections each
// opened by a line "-- name --"), shows one merge rule on one input domain.
// Its text before the first section says what the rule is. The sections:
//
//   - "input": the path of the input domain, relative to the case file; or
//     "input.xml": the input domain itself.
//   - "expr" or "expr <variant>", one or more: GuestDefinition expressions,
//     each of which must give the wanted domain.
//   - "want": the domain the merge gives, as libvirtxml marshals it.
//
// Every expression is evaluated with VMI as vmi.
package celenvtest

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// MergeCase is one case file.
type MergeCase struct {
	// Rule is the file name without .txtar: the rule the case shows.
	Rule string
	// Path is the case file.
	Path string
	// About is the text before the first section.
	About string
	// Input is the input domain XML.
	Input string
	// Exprs are the expressions, in file order.
	Exprs []Expr
	// Want is the domain every expression gives.
	Want string
}

// Expr is one expression of a case.
type Expr struct {
	// Variant is what follows "expr" in the section name ("" for none).
	Variant string
	Text    string
}

// VMI is the VirtualMachineInstance the cases are evaluated with.
func VMI() *kubevirtv1.VirtualMachineInstance {
	return &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{
		Name: "db-0", Namespace: "prod", Labels: map[string]string{"tier": "gold"},
	}}
}

// LoadMergeCases reads every case file of dir, sorted by rule.
func LoadMergeCases(dir string) ([]MergeCase, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no merge cases (*.txtar) in %s", dir)
	}
	sort.Strings(paths)
	out := make([]MergeCase, 0, len(paths))
	for _, p := range paths {
		c, err := LoadMergeCase(p)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// LoadMergeCase reads one case file.
func LoadMergeCase(path string) (MergeCase, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return MergeCase{}, err
	}
	c := MergeCase{Rule: strings.TrimSuffix(filepath.Base(path), ".txtar"), Path: path}
	about, sections := splitSections(string(data))
	c.About = strings.TrimSpace(about)
	for _, f := range sections {
		body := strings.TrimSpace(f.body)
		switch name := f.name; {
		case name == "input":
			in, err := os.ReadFile(filepath.Join(filepath.Dir(path), body))
			if err != nil {
				return MergeCase{}, fmt.Errorf("%s: input: %w", path, err)
			}
			c.Input = string(in)
		case name == "input.xml":
			c.Input = body
		case name == "expr" || strings.HasPrefix(name, "expr "):
			c.Exprs = append(c.Exprs, Expr{Variant: strings.TrimSpace(strings.TrimPrefix(name, "expr")), Text: body})
		case name == "want":
			c.Want = body
		default:
			return MergeCase{}, fmt.Errorf("%s: unknown section %q", path, name)
		}
	}
	switch {
	case c.Input == "":
		return MergeCase{}, fmt.Errorf("%s: no input", path)
	case len(c.Exprs) == 0:
		return MergeCase{}, fmt.Errorf("%s: no expr", path)
	}
	return c, nil
}

// section is one "-- name --" section of a case file and the lines under it.
type section struct{ name, body string }

// splitSections splits a case file into the text before its first section
// and its sections. A section opens with a line that starts with "-- " and
// ends with " --"; its name is what lies between, trimmed.
func splitSections(data string) (string, []section) {
	var before strings.Builder
	var out []section
	for line := range strings.Lines(data) {
		trimmed := strings.TrimRight(line, "\r\n")
		if name, ok := sectionName(trimmed); ok {
			out = append(out, section{name: name})
			continue
		}
		if len(out) == 0 {
			before.WriteString(line)
		} else {
			out[len(out)-1].body += line
		}
	}
	return before.String(), out
}

func sectionName(line string) (string, bool) {
	rest, ok := strings.CutPrefix(line, "-- ")
	if !ok {
		return "", false
	}
	name, ok := strings.CutSuffix(rest, " --")
	if !ok {
		return "", false
	}
	name = strings.TrimSpace(name)
	return name, name != ""
}
