// SPDX-License-Identifier: Apache-2.0

//go:build cgo

package domainrun

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// notCarried lists the migration parameters the Go binding knows that the
// contract deliberately leaves out of MigrationParams, each with the reason,
// keyed by the binding's C macro name. It is empty: the contract carries
// every parameter libvirt.org/go/libvirt v1.12005.0 can send. A binding
// upgrade that adds a parameter fails TestContractParamsAreTheBindingParams
// until the parameter is added to protos/hooks/v1alpha1 (proto field and
// table) or listed here.
var notCarried = map[string]string{}

// bindingModule is the Go binding whose parameters the contract mirrors.
const bindingModule = "libvirt.org/go/libvirt"

// TestContractParamsAreTheBindingParams checks the contract's table of
// libvirt migration parameters against the binding's own: every name of the
// table is one the binding defines (a VIR_MIGRATE_PARAM_* macro of its
// generated header), and every parameter the binding sends (a
// C.VIR_MIGRATE_PARAM_* its Go code uses) is in the table or in notCarried.
func TestContractParamsAreTheBindingParams(t *testing.T) {
	dir := bindingDir(t)
	defined := bindingMacros(t, dir)
	used := bindingUses(t, dir)
	if len(used) == 0 {
		t.Fatalf("found no C.VIR_MIGRATE_PARAM_* in the Go files of %s", dir)
	}

	byValue := map[string]string{}
	for macro, value := range defined {
		byValue[value] = macro
	}
	table := hooksv1alpha1.LibvirtParamNames()
	for _, name := range table {
		if _, ok := byValue[name]; !ok {
			t.Errorf("the contract's parameter %q is not a VIR_MIGRATE_PARAM_* of %s", name, bindingModule)
		}
	}
	for _, macro := range used {
		value, ok := defined[macro]
		switch {
		case !ok:
			t.Errorf("%s uses %s, which its generated header does not define", bindingModule, macro)
		case notCarried[macro] != "":
			if slices.Contains(table, value) {
				t.Errorf("%s (%q) is listed as not carried but is in the contract's table", macro, value)
			}
		case !slices.Contains(table, value):
			t.Errorf("%s sends %s (%q), which is neither in the contract's table nor listed in notCarried", bindingModule, macro, value)
		}
	}
	for macro := range notCarried {
		if !slices.Contains(used, macro) {
			t.Errorf("notCarried lists %s, which %s does not send", macro, bindingModule)
		}
	}
}

// TestEveryContractParamHasARelease checks that paramSince, the libvirt
// release of each parameter, covers exactly the contract's table.
func TestEveryContractParamHasARelease(t *testing.T) {
	table := hooksv1alpha1.LibvirtParamNames()
	for _, name := range table {
		if _, ok := paramSince[name]; !ok {
			t.Errorf("paramSince has no release for %q", name)
		}
	}
	for name := range paramSince {
		if !slices.Contains(table, name) {
			t.Errorf("paramSince names %q, which the contract does not carry", name)
		}
	}
}

// bindingDir returns the source directory of the binding this module builds
// with.
func bindingDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", bindingModule).Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", bindingModule, err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		t.Fatalf("go list -m %s gave no directory (module not downloaded?)", bindingModule)
	}
	return dir
}

var macroDefine = regexp.MustCompile(`(?m)^#\s*define\s+(VIR_MIGRATE_PARAM_\w+)\s+"([^"]*)"`)

// bindingMacros reads the VIR_MIGRATE_PARAM_* macros the binding defines
// for libvirt releases older than itself, with their values.
func bindingMacros(t *testing.T, dir string) map[string]string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(dir, "libvirt_generated_macros.h"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range macroDefine.FindAllStringSubmatch(string(src), -1) {
		out[m[1]] = m[2]
	}
	if len(out) == 0 {
		t.Fatalf("no VIR_MIGRATE_PARAM_* defined in %s/libvirt_generated_macros.h", dir)
	}
	return out
}

// bindingUses returns the VIR_MIGRATE_PARAM_* macros the binding's Go code
// refers to as C.VIR_MIGRATE_PARAM_*, sorted.
func bindingUses(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "C" && strings.HasPrefix(sel.Sel.Name, "VIR_MIGRATE_PARAM_") {
				seen[sel.Sel.Name] = true
			}
			return true
		})
	}
	return slices.Sorted(maps.Keys(seen))
}
