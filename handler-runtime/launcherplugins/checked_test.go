// SPDX-License-Identifier: Apache-2.0

package launcherplugins

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/kubevirt-plugins/framework/api/celenv"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/handler-runtime/store"
)

// handOver makes a Selector on src and returns it, what it hands a launcher
// and that decoded.
func handOver(t *testing.T, src *source) (*Selector, LauncherPlugins, []pluginv1alpha1.Plugin) {
	t.Helper()
	s, err := New(Options{Plugins: src})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.LauncherPlugins(vmi)
	if err != nil {
		t.Fatal(err)
	}
	plugins, err := Decode(got.Data)
	if err != nil {
		t.Fatal(err)
	}
	return s, got, plugins
}

// TestLaunchersReceiveTheCheckedFormsOfTheExpressions: each Plugin handed
// over carries the checked forms of the expressions that compile, which a
// launcher's environment plans without compiling; one that does not
// compile has none (the launcher compiles its text and reports it), and
// the data stays the same from one encoding to the next.
func TestLaunchersReceiveTheCheckedFormsOfTheExpressions(t *testing.T) {
	p := withLauncherHook("tuning")
	p.Spec.Condition = `"example.com/tuning" in vmi.Labels`
	p.Spec.LauncherHooks[0].Condition = `vmi.Labels["example.com/tuning"] == "cpu"`
	p.Spec.LauncherHooks[0].CEL.Expression = `Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`
	broken := withLauncherHook("broken")
	broken.Spec.Condition = `vmi.NoSuchField == 1`
	src := &source{snap: store.Snapshot{Enabled: true, Revision: 1, Plugins: []*pluginv1alpha1.Plugin{p, broken}}}
	s, got, plugins := handOver(t, src)
	sets := map[string]celenv.CheckedSet{}
	for _, pl := range plugins {
		var set celenv.CheckedSet
		if err := json.Unmarshal([]byte(pl.Annotations[pluginv1alpha1.CheckedCELAnnotation]), &set); err != nil {
			t.Fatalf("plugin %s: annotation %q: %v", pl.Name, pl.Annotations[pluginv1alpha1.CheckedCELAnnotation], err)
		}
		sets[pl.Name] = set
	}
	tuning := sets["tuning"]
	if got, want := slices.Sorted(maps.Keys(tuning.Conditions)), []string{p.Spec.Condition, p.Spec.LauncherHooks[0].Condition}; !slices.Equal(got, want) {
		t.Fatalf("checked conditions %q, want %q", got, want)
	}
	if _, ok := tuning.Transforms[p.Spec.LauncherHooks[0].CEL.Expression]; !ok || len(tuning.Transforms) != 1 {
		t.Fatalf("checked transforms %q, want the hook's", slices.Collect(maps.Keys(tuning.Transforms)))
	}
	if b := sets["broken"]; b.Conditions[broken.Spec.Condition] != nil {
		t.Fatal("a condition that does not compile was handed a checked form")
	}

	launcher, err := celenv.New(celenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for expr, checked := range tuning.Conditions {
		if _, err := launcher.ConditionFromChecked(expr, checked); err != nil {
			t.Errorf("condition %q: %v", expr, err)
		}
	}
	for expr, checked := range tuning.Transforms {
		if _, err := launcher.DomainTransformFromChecked(expr, checked); err != nil {
			t.Errorf("transform %q: %v", expr, err)
		}
	}

	again, err := EncodeChecked(src.snap.Plugins, s.cel)
	if err != nil {
		t.Fatal(err)
	}
	if again.Generation != got.Generation {
		t.Fatal("encoding the same Plugins again changed the generation")
	}
}
