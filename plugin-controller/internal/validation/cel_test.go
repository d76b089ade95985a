package validation

import (
	"errors"
	"strings"
	"testing"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

// rejectMarked rejects every expression containing "BAD" and records which
// check (condition or domain transform) was asked, so the test also shows
// that each field is checked against the right result type.
type rejectMarked struct{}

func (rejectMarked) CheckCondition(e string) error {
	if strings.Contains(e, "BAD") {
		return errors.New("condition rejected")
	}
	return nil
}

func (rejectMarked) CheckDomainTransform(e string) error {
	if strings.Contains(e, "BAD") {
		return errors.New("transform rejected")
	}
	return nil
}

func TestPluginCELNamesTheFieldPathOfEveryRejectedExpression(t *testing.T) {
	sidecar := &pluginv1alpha1.SidecarHook{
		SocketPath:     "/var/run/kubevirt-plugin/p/hook.sock",
		PermittedHooks: []pluginv1alpha1.LauncherHookPoint{pluginv1alpha1.PreBoot},
	}
	cel := func(e string) *pluginv1alpha1.CELHook {
		return &pluginv1alpha1.CELHook{HookPoint: pluginv1alpha1.GuestDefinition, Expression: e}
	}
	cases := []struct {
		name string
		spec pluginv1alpha1.PluginSpec
		want []string // "path|detail"
	}{
		{
			name: "all valid",
			spec: pluginv1alpha1.PluginSpec{
				Condition:     "true",
				LauncherHooks: []pluginv1alpha1.LauncherHook{{CEL: cel("Domain{}")}, {Sidecar: sidecar, Condition: "true"}},
				NodeHooks:     []pluginv1alpha1.NodeHook{{Condition: "true"}},
			},
		},
		{
			name: "empty conditions are not checked",
			spec: pluginv1alpha1.PluginSpec{LauncherHooks: []pluginv1alpha1.LauncherHook{{Sidecar: sidecar}}},
		},
		{
			name: "plugin condition",
			spec: pluginv1alpha1.PluginSpec{Condition: "BAD"},
			want: []string{"spec.condition|condition rejected"},
		},
		{
			name: "second launcher hook expression checked as a transform",
			spec: pluginv1alpha1.PluginSpec{
				LauncherHooks: []pluginv1alpha1.LauncherHook{{CEL: cel("Domain{}")}, {CEL: cel("BAD")}},
			},
			want: []string{"spec.launcherHooks[1].cel.expression|transform rejected"},
		},
		{
			name: "hook conditions and node hook conditions, in spec order",
			spec: pluginv1alpha1.PluginSpec{
				Condition:     "BAD",
				LauncherHooks: []pluginv1alpha1.LauncherHook{{Sidecar: sidecar, Condition: "BAD"}, {CEL: cel("BAD"), Condition: "BAD"}},
				NodeHooks:     []pluginv1alpha1.NodeHook{{Condition: "true"}, {Condition: "BAD"}},
			},
			want: []string{
				"spec.condition|condition rejected",
				"spec.launcherHooks[0].condition|condition rejected",
				"spec.launcherHooks[1].condition|condition rejected",
				"spec.launcherHooks[1].cel.expression|transform rejected",
				"spec.nodeHooks[1].condition|condition rejected",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := PluginCEL(rejectMarked{}, &tc.spec)
			var got []string
			for _, e := range errs {
				got = append(got, e.Field+"|"+e.Detail)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
