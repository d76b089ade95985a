// SPDX-License-Identifier: Apache-2.0

package pipeline_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/kubevirt-plugins/framework/api/celenv"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
)

// tooManyHooks is a Plugin with n CEL hooks, each with a condition and an
// expression of its own, so that no compilation could be a cache hit.
func tooManyHooks(n int) pluginv1alpha1.Plugin {
	hooks := make([]pluginv1alpha1.LauncherHook, n)
	for i := range hooks {
		hooks[i] = withCondition(celHook(fmt.Sprintf(`Domain{Description: "hook %d"}`, i)), fmt.Sprintf(`vmi.Name == "vm-%d"`, i))
	}
	p := plugin("many", hooks...)
	p.Spec.Condition = `vmi.Name != ""`
	return p
}

// warmEnv is an environment that has built both of its CEL environments,
// so that what New allocates with it is what compiling the plugins costs.
func warmEnv(t testing.TB) *celenv.Env {
	t.Helper()
	env, err := celenv.New(celenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Condition(`vmi.Name == "warm"`); err != nil {
		t.Fatal(err)
	}
	if _, err := env.DomainTransform(`Domain{Description: "warm"}`); err != nil {
		t.Fatal(err)
	}
	return env
}

// TestNewRefusesAPluginWithTooManyHooksBeforeCompiling: a Plugin with
// 10,000 launcher hooks (the CRD allows pluginv1alpha1.MaxHooks), handed to
// the launcher with admission bypassed, is refused by count without one of
// its 20,001 expressions being compiled: New allocates a few times per
// hook (copying the Plugin), where compiling one expression allocates
// hundreds of times. The plugin's hooks then fail under Fail, saying how
// many hooks are allowed.
func TestNewRefusesAPluginWithTooManyHooksBeforeCompiling(t *testing.T) {
	const hooks, maxAllocsPerHook = 10_000, 5
	many := tooManyHooks(hooks)
	env := warmEnv(t)
	var p *pipeline.Pipeline
	allocs := testing.AllocsPerRun(1, func() {
		var err error
		if p, err = pipeline.New([]pluginv1alpha1.Plugin{many}, pipeline.Options{CEL: env}); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > hooks*maxAllocsPerHook {
		t.Errorf("New allocated %.0f times for a Plugin with %d hooks, want at most %d per hook: it compiled their expressions", allocs, hooks, maxAllocsPerHook)
	}
	t.Cleanup(func() { _ = p.Close() })
	_, err := p.GuestDefinition(t.Context(), testVMI(t), testDomain(t), pipeline.Boot)
	var he *pipeline.HookError
	if !errors.As(err, &he) || he.Plugin != "many" || he.HookIndex != 0 {
		t.Fatalf("GuestDefinition: %v, want the HookError of plugin many's hook #0", err)
	}
	mustContain(t, err, "spec.launcherHooks", fmt.Sprintf("must have at most %d items", pluginv1alpha1.MaxHooks))
}

// TestNewPlansNoCheckedFormOfAPluginWithTooManyHooks: the checked forms
// virt-handler would put on a Plugin with more hooks than the CRD allows
// are not planned either: the launcher's line about its CEL expressions,
// which counts every expression it plans or compiles, is not written.
func TestNewPlansNoCheckedFormOfAPluginWithTooManyHooks(t *testing.T) {
	handler, err := celenv.New(celenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	many := withChecked(t, handler, tooManyHooks(pluginv1alpha1.MaxHooks+1))
	log := &lines{}
	p, err := pipeline.New([]pluginv1alpha1.Plugin{many}, pipeline.Options{Logger: log.logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if said := log.with("CEL expressions"); len(said) != 0 {
		t.Errorf("the launcher planned or compiled expressions of a Plugin with %d hooks: %q", pluginv1alpha1.MaxHooks+1, said)
	}
	if said := log.with("does not compile"); len(said) != 1 || !strings.Contains(said[0], fmt.Sprintf("must have at most %d items", pluginv1alpha1.MaxHooks)) {
		t.Errorf("lines about the plugin: %q, want one saying at most %d hooks are allowed", said, pluginv1alpha1.MaxHooks)
	}
}

// BenchmarkNewTenThousandHooks is New on a Plugin with 10,000 CEL hooks,
// each with a condition and an expression of its own, with a new
// environment each time.
func BenchmarkNewTenThousandHooks(b *testing.B) {
	many := []pluginv1alpha1.Plugin{tooManyHooks(10_000)}
	b.ReportAllocs()
	for b.Loop() {
		env, err := celenv.New(celenv.Options{})
		if err != nil {
			b.Fatal(err)
		}
		p, err := pipeline.New(many, pipeline.Options{CEL: env, Logger: logr.Discard()})
		if err != nil {
			b.Fatal(err)
		}
		_ = p.Close()
	}
}
