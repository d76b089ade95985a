package validation

import (
	"errors"
	"strings"
	"testing"

	"github.com/kubevirt-plugins/framework/api/celenv"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

func TestRealCELErrorsCarryFieldPathReasonAndCause(t *testing.T) {
	env, err := celenv.New(celenv.Options{CostLimit: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	gd := func(e string) pluginv1alpha1.LauncherHook {
		return pluginv1alpha1.LauncherHook{CEL: &pluginv1alpha1.CELHook{HookPoint: pluginv1alpha1.GuestDefinition, Expression: e}}
	}
	cases := []struct {
		name       string
		spec       pluginv1alpha1.PluginSpec
		path       string
		reason     string
		detailPart string
	}{
		{
			name: "condition that does not parse", spec: pluginv1alpha1.PluginSpec{Condition: `vmi.Labels[`},
			path: "spec.condition", reason: celenv.ReasonSyntax, detailPart: "syntax error",
		},
		{
			name: "condition that is not a bool", spec: pluginv1alpha1.PluginSpec{Condition: `vmi.Name`},
			path: "spec.condition", reason: celenv.ReasonType, detailPart: "type error",
		},
		{
			name: "condition that sees domainSpec", spec: pluginv1alpha1.PluginSpec{
				NodeHooks: []pluginv1alpha1.NodeHook{{Condition: `domainSpec.Name == "x"`}},
			},
			path: "spec.nodeHooks[0].condition", reason: celenv.ReasonType, detailPart: "domainSpec",
		},
		{
			name: "GuestDefinition expression that is not a Domain", spec: pluginv1alpha1.PluginSpec{
				LauncherHooks: []pluginv1alpha1.LauncherHook{gd(`Domain{}`), gd(`true`)},
			},
			path: "spec.launcherHooks[1].cel.expression", reason: celenv.ReasonType, detailPart: "type error",
		},
		{
			name: "unknown field in Domain", spec: pluginv1alpha1.PluginSpec{
				LauncherHooks: []pluginv1alpha1.LauncherHook{gd(`Domain{NoSuchField: "x"}`)},
			},
			path: "spec.launcherHooks[0].cel.expression", reason: celenv.ReasonType, detailPart: "NoSuchField",
		},
		{
			name: "cost over the limit", spec: pluginv1alpha1.PluginSpec{
				Condition: `vmi.Spec.Domain.Devices.Disks.all(d, vmi.Spec.Domain.Devices.Disks.all(e, vmi.Spec.Domain.Devices.Interfaces.all(i, d.Name != e.Name || i.Name != "")))`,
			},
			path: "spec.condition", reason: celenv.ReasonCost, detailPart: "exceeds the cost limit 100000",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := PluginCEL(CELEnv{Env: env}, &tc.spec)
			if len(errs) != 1 {
				t.Fatalf("got %d errors (%v), want 1", len(errs), errs)
			}
			e := errs[0]
			if e.Field != tc.path {
				t.Errorf("path %q, want %q", e.Field, tc.path)
			}
			if !strings.Contains(e.Detail, tc.detailPart) || !strings.HasPrefix(e.Detail, tc.reason+" error: ") {
				t.Errorf("detail %q, want prefix %q and %q in it", e.Detail, tc.reason+" error: ", tc.detailPart)
			}
			if !strings.Contains(e.Error(), tc.path) {
				t.Errorf("error text %q does not name the path", e.Error())
			}
		})
	}
}

func TestRealCELAcceptsValidExpressions(t *testing.T) {
	env, err := celenv.New(celenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	spec := pluginv1alpha1.PluginSpec{
		Condition: `"example.com/tuning" in vmi.Labels`,
		LauncherHooks: []pluginv1alpha1.LauncherHook{{
			CEL:       &pluginv1alpha1.CELHook{HookPoint: pluginv1alpha1.GuestDefinition, Expression: `Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`},
			Condition: `vmi.Labels["example.com/tuning"] == "cpu"`,
		}},
		NodeHooks: []pluginv1alpha1.NodeHook{{Condition: `vmi.Name != ""`}},
	}
	if errs := PluginCEL(CELEnv{Env: env}, &spec); len(errs) != 0 {
		t.Fatalf("valid spec rejected: %v", errs)
	}
}

func TestCompileErrorStaysReachableWithErrorsAs(t *testing.T) {
	env, err := celenv.New(celenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = CELEnv{Env: env}.CheckCondition("1 +")
	var ce *celenv.CompileError
	if !errors.As(err, &ce) || ce.Reason != celenv.ReasonSyntax {
		t.Fatalf("error %v does not unwrap to a syntax CompileError", err)
	}
}
