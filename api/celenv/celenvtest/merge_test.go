// SPDX-License-Identifier: Apache-2.0

package celenvtest

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestSplitSections(t *testing.T) {
	about, got := splitSections("What the rule is.\n\n-- input.xml --\n<domain/>\n-- expr --\nDomain{}\n-- expr no spaces--\nnot a section\n-- --\nnor this\n-- want --\r\n<domain/>\n")
	if about != "What the rule is.\n\n" {
		t.Errorf("text before the sections %q", about)
	}
	want := []section{
		{"input.xml", "<domain/>\n"},
		{"expr", "Domain{}\n-- expr no spaces--\nnot a section\n-- --\nnor this\n"},
		{"want", "<domain/>\n"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sections %q, want %q", got, want)
	}
}

func TestLoadMergeCaseReadsEverySection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "Rule.txtar")
	data := "About the rule.\n-- input.xml --\n<domain type=\"kvm\"/>\n-- expr --\nDomain{}\n-- expr literal --\nDomain{Title: \"x\"}\n-- want --\n<domain/>\n"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadMergeCase(path)
	if err != nil {
		t.Fatal(err)
	}
	want := MergeCase{Rule: "Rule", Path: path, About: "About the rule.", Input: `<domain type="kvm"/>`,
		Exprs: []Expr{{"", "Domain{}"}, {"literal", `Domain{Title: "x"}`}}, Want: "<domain/>"}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("case %+v, want %+v", c, want)
	}
}
