// SPDX-License-Identifier: Apache-2.0

package validation_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt-plugins/framework/api/celenv"
	v1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/api/plugin/v1alpha1/validation"
)

func newEnv(t *testing.T, opts celenv.Options) *celenv.Env {
	t.Helper()
	env, err := celenv.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func gd(expr string) v1alpha1.LauncherHook {
	return v1alpha1.LauncherHook{CEL: &v1alpha1.CELHook{HookPoint: v1alpha1.GuestDefinition, Expression: expr}}
}

func plugin(name string, spec v1alpha1.PluginSpec) *v1alpha1.Plugin {
	return &v1alpha1.Plugin{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
}

func TestCELErrorsCarryFieldPathReasonAndCause(t *testing.T) {
	env := newEnv(t, celenv.Options{CostLimit: 100_000})
	for _, tc := range []struct {
		name, path, reason, detailPart string
		// position is where CEL places the error in the expression, as
		// <input>:line:column; "" for errors about the whole expression.
		position string
		spec     v1alpha1.PluginSpec
	}{
		{name: "condition that does not parse", spec: v1alpha1.PluginSpec{Condition: `vmi.Labels[`},
			path: "spec.condition", reason: celenv.ReasonSyntax, detailPart: "Syntax error", position: "<input>:1:12"},
		{name: "condition that is not a bool", spec: v1alpha1.PluginSpec{Condition: `vmi.Name`},
			path: "spec.condition", reason: celenv.ReasonType, detailPart: "bool"},
		{name: "condition that sees domainSpec", spec: v1alpha1.PluginSpec{
			NodeHooks: []v1alpha1.NodeHook{{Condition: `domainSpec.Name == "x"`}}},
			path: "spec.nodeHooks[0].condition", reason: celenv.ReasonType, detailPart: "domainSpec", position: "<input>:1:1"},
		{name: "GuestDefinition expression that is not a Domain", spec: v1alpha1.PluginSpec{
			LauncherHooks: []v1alpha1.LauncherHook{gd(`Domain{}`), gd(`true`)}},
			path: "spec.launcherHooks[1].cel.expression", reason: celenv.ReasonType, detailPart: "Domain"},
		{name: "unknown field in Domain", spec: v1alpha1.PluginSpec{
			LauncherHooks: []v1alpha1.LauncherHook{gd(`Domain{NoSuchField: "x"}`)}},
			path: "spec.launcherHooks[0].cel.expression", reason: celenv.ReasonType, detailPart: "NoSuchField", position: "<input>:1:19"},
		// A field initialiser reading an attribute (IOThread), in a map()
		// body, on the second line: the position is in the text as written.
		{name: "unknown field next to an attribute read", spec: v1alpha1.PluginSpec{
			LauncherHooks: []v1alpha1.LauncherHook{gd("Domain{Devices: DomainDeviceList{Disks: domainSpec.Devices.Disks.map(d,\n  DomainDisk{Driver: DomainDiskDriver{IOThread: vmi.Name != \"\" ? d.Driver.IOThread : 1u, Cache: d.Driver.Cach}})}}")}},
			path: "spec.launcherHooks[0].cel.expression", reason: celenv.ReasonType, detailPart: "undefined field 'Cach'", position: "<input>:2:105"},
		{name: "hook condition", spec: v1alpha1.PluginSpec{
			LauncherHooks: []v1alpha1.LauncherHook{{CEL: gd(`Domain{}`).CEL, Condition: `vmi.Labels`}}},
			path: "spec.launcherHooks[0].condition", reason: celenv.ReasonType, detailPart: "bool"},
		{name: "cost over the limit", spec: v1alpha1.PluginSpec{
			Condition: `vmi.Spec.Domain.Devices.Disks.all(d, vmi.Spec.Domain.Devices.Disks.all(e, vmi.Spec.Domain.Devices.Interfaces.all(i, d.Name != e.Name || i.Name != "")))`},
			path: "spec.condition", reason: celenv.ReasonCost, detailPart: "100000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := validation.CEL(plugin("p", tc.spec), env)
			if len(errs) != 1 {
				t.Fatalf("got %d errors (%v), want 1", len(errs), errs)
			}
			e := errs[0]
			if e.Field != tc.path {
				t.Errorf("path %q, want %q", e.Field, tc.path)
			}
			if !strings.HasPrefix(e.Detail, tc.reason+" error: ") || !strings.Contains(e.Detail, tc.detailPart) {
				t.Errorf("detail %q, want prefix %q and %q in it", e.Detail, tc.reason+" error: ", tc.detailPart)
			}
			if tc.position != "" && !strings.Contains(e.Detail, tc.position+": ") {
				t.Errorf("detail %q does not place the error at %s", e.Detail, tc.position)
			}
		})
	}
}

func TestCELAcceptsTheGuideExpressions(t *testing.T) {
	env := newEnv(t, celenv.Options{})
	p := plugin("full-example", v1alpha1.PluginSpec{
		Condition: `"example.com/tuning" in vmi.Labels`,
		LauncherHooks: []v1alpha1.LauncherHook{{
			CEL:       gd(`Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`).CEL,
			Condition: `vmi.Labels["example.com/tuning"] == "cpu"`,
		}},
	})
	if errs := validation.CEL(p, env); len(errs) != 0 {
		t.Fatalf("rejected: %v", errs)
	}
}

func TestAllListsEveryProblemByFieldPath(t *testing.T) {
	env := newEnv(t, celenv.Options{})
	p := plugin("", v1alpha1.PluginSpec{
		FailureStrategy: "Sometimes",
		LauncherHooks:   []v1alpha1.LauncherHook{gd(`Domain{Name: 1}`), {}},
	})
	p.Spec.LauncherHooks[0].Timeout = &metav1.Duration{Duration: 1e9}
	want := map[string]bool{
		"metadata.name":                        false,
		"spec.failureStrategy":                 false,
		"spec.launcherHooks[0].timeout":        false,
		"spec.launcherHooks[0].cel.expression": false,
		"spec.launcherHooks[1]":                false,
	}
	errs := validation.All(p, env)
	for _, e := range errs {
		if _, ok := want[e.Field]; ok {
			want[e.Field] = true
		}
	}
	for f, seen := range want {
		if !seen {
			t.Errorf("no problem reported at %s; got %v", f, errs)
		}
	}
}

func TestAllOrdersProblemsByFieldPath(t *testing.T) {
	env := newEnv(t, celenv.Options{})
	hooks := make([]v1alpha1.LauncherHook, 11)
	for i := range hooks {
		hooks[i] = gd(`Domain{}`)
	}
	hooks[10] = v1alpha1.LauncherHook{} // structural problem
	hooks[2] = gd(`Domain{Name: 1}`)    // CEL problem
	p := plugin("ordered", v1alpha1.PluginSpec{Condition: `1`, FailureStrategy: "Often", LauncherHooks: hooks})
	var got []string
	for _, e := range validation.All(p, env) {
		got = append(got, e.Field)
	}
	want := []string{"spec.condition", "spec.failureStrategy", "spec.launcherHooks[2].cel.expression", "spec.launcherHooks[10]"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("problems in order %v, want %v", got, want)
	}
}

func TestSizeLimitsOfTheSchema(t *testing.T) {
	hooks := make([]v1alpha1.LauncherHook, 33)
	for i := range hooks {
		hooks[i] = gd(`Domain{}`)
	}
	for _, tc := range []struct {
		name, field string
		p           *v1alpha1.Plugin
	}{
		{"name not a DNS subdomain", "metadata.name", plugin("Not_DNS", v1alpha1.PluginSpec{})},
		{"condition over 4096 bytes", "spec.condition", plugin("p", v1alpha1.PluginSpec{Condition: strings.Repeat("a", 4097)})},
		{"more than 32 launcher hooks", "spec.launcherHooks", plugin("p", v1alpha1.PluginSpec{LauncherHooks: hooks})},
		{"reference name over 253 bytes", "spec.mutatingAdmissionPolicies[0].name", plugin("p", v1alpha1.PluginSpec{
			MutatingAdmissionPolicies: []v1alpha1.AdmissionReference{{Name: strings.Repeat("a", 254)}}})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, e := range validation.Plugin(tc.p) {
				if e.Field == tc.field {
					return
				}
			}
			t.Fatalf("no problem at %s: %v", tc.field, validation.Plugin(tc.p))
		})
	}
}
