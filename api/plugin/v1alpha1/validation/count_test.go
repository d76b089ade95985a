// SPDX-License-Identifier: Apache-2.0

package validation_test

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubevirt-plugins/framework/api/celenv"
	v1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/api/plugin/v1alpha1/validation"
)

// manyHooks is a Plugin with n launcher hooks and n node hooks, each with
// an expression of its own, so that no compilation could be a cache hit.
func manyHooks(n int) *v1alpha1.Plugin {
	p := &v1alpha1.Plugin{}
	p.Name = "many"
	for i := range n {
		p.Spec.LauncherHooks = append(p.Spec.LauncherHooks, v1alpha1.LauncherHook{
			Condition: fmt.Sprintf(`vmi.Name == "vm-%d"`, i),
			CEL: &v1alpha1.CELHook{
				HookPoint:  v1alpha1.GuestDefinition,
				Expression: fmt.Sprintf(`Domain{Description: "hook %d"}`, i),
			},
		})
		p.Spec.NodeHooks = append(p.Spec.NodeHooks, v1alpha1.NodeHook{
			Socket:         "/var/run/kubevirt/many/hook.sock",
			PermittedHooks: []v1alpha1.NodeHookPoint{v1alpha1.PreVMStart},
			Condition:      fmt.Sprintf(`vmi.Namespace == "ns-%d"`, i),
		})
	}
	return p
}

// TestTooManyHooksAreRefusedBeforeAnyExpressionCompiles: a Plugin with
// 10,000 launcher and 10,000 node hooks, more than the schema's maxItems
// (32), is refused by count by All and by CEL without compiling one of its
// expressions. Each run uses a new environment, and building an
// environment for the first expression alone allocates tens of thousands
// of times (api/celenv: TestNewBuildsNoEnvironment), so a few hundred
// allocations mean that nothing was compiled.
func TestTooManyHooksAreRefusedBeforeAnyExpressionCompiles(t *testing.T) {
	p := manyHooks(10_000)
	const maxAllocs = 500
	for _, f := range []struct {
		name string
		run  func(*v1alpha1.Plugin, *celenv.Env) field.ErrorList
	}{{"All", validation.All}, {"CEL", validation.CEL}} {
		t.Run(f.name, func(t *testing.T) {
			var errs field.ErrorList
			allocs := testing.AllocsPerRun(1, func() {
				env, err := celenv.New(celenv.Options{})
				if err != nil {
					t.Fatal(err)
				}
				errs = f.run(p, env)
			})
			if allocs > maxAllocs {
				t.Errorf("%s allocated %.0f times on a Plugin with 10,000 hooks of each kind, want at most %d: it compiled expressions", f.name, allocs, maxAllocs)
			}
			want := map[string]bool{"spec.launcherHooks": false, "spec.nodeHooks": false}
			for _, e := range errs {
				if _, ok := want[e.Field]; !ok || e.Type != field.ErrorTypeTooMany || !strings.Contains(e.Error(), "at most 32") {
					t.Errorf("%s: %s, want only TooMany errors at most 32 of spec.launcherHooks and spec.nodeHooks", f.name, e.Error())
					continue
				}
				want[e.Field] = true
			}
			for path, seen := range want {
				if !seen {
					t.Errorf("%s: no TooMany error for %s", f.name, path)
				}
			}
		})
	}
}

// TestAtMostMaxHooksAreCompiledAsBefore: at the bound, every expression is
// still compiled and a bad one reported where it is.
func TestAtMostMaxHooksAreCompiledAsBefore(t *testing.T) {
	p := manyHooks(v1alpha1.MaxHooks)
	env, err := celenv.New(celenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if errs := validation.All(p, env); len(errs) != 0 {
		t.Fatalf("a Plugin with %d hooks of each kind: %v", v1alpha1.MaxHooks, errs.ToAggregate())
	}
	p.Spec.NodeHooks[v1alpha1.MaxHooks-1].Condition = "vmi.Name"
	errs := validation.All(p, env)
	if len(errs) != 1 || errs[0].Field != fmt.Sprintf("spec.nodeHooks[%d].condition", v1alpha1.MaxHooks-1) {
		t.Fatalf("errors %v, want one at the last node hook's condition", errs.ToAggregate())
	}
}

// BenchmarkAllTenThousandHooks is All on a Plugin with 10,000 launcher and
// 10,000 node hooks, with a new environment each time.
func BenchmarkAllTenThousandHooks(b *testing.B) {
	p := manyHooks(10_000)
	b.ReportAllocs()
	for b.Loop() {
		env, err := celenv.New(celenv.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if errs := validation.All(p, env); len(errs) == 0 {
			b.Fatal("accepted")
		}
	}
}
