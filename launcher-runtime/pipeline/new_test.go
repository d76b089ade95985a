package pipeline_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt-plugins/framework/api/celenv"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
)

func TestNewRejectsInvalidPlugins(t *testing.T) {
	withPluginCondition := func(p pluginv1alpha1.Plugin, c string) pluginv1alpha1.Plugin {
		p.Spec.Condition = c
		return p
	}
	preboot := celHook(`Domain{}`)
	preboot.CEL.HookPoint = pluginv1alpha1.PreBoot
	for _, tc := range []struct {
		name    string
		plugins []pluginv1alpha1.Plugin
		want    []string
	}{
		{"ExpressionDoesNotCompile", []pluginv1alpha1.Plugin{plugin("bad", celHook(`Domain{CPU: DomainCPU{Mode: 1}}`))},
			[]string{`plugin "bad"`, "spec.launcherHooks[0].cel.expression"}},
		{"ExpressionNotADomain", []pluginv1alpha1.Plugin{plugin("bad", celHook(`"host-passthrough"`))},
			[]string{"spec.launcherHooks[0].cel.expression", "must return a Domain"}},
		{"ConditionNotBool", []pluginv1alpha1.Plugin{withPluginCondition(plugin("bad"), `vmi.Name`)},
			[]string{"spec.condition", "must evaluate to bool"}},
		{"HookConditionUnknownField", []pluginv1alpha1.Plugin{plugin("bad", withCondition(celHook(`Domain{}`), `vmi.NoSuchField == 1`))},
			[]string{"spec.launcherHooks[0].condition"}},
		{"CELAtPreBoot", []pluginv1alpha1.Plugin{plugin("bad", preboot)},
			[]string{"spec.launcherHooks[0].cel.hookPoint"}},
		{"SocketOfAnotherPlugin", []pluginv1alpha1.Plugin{plugin("bad", sidecarHook(declared("other", "hook.sock"), pb))},
			[]string{"spec.launcherHooks[0].sidecar.socketPath"}},
		{"TimeoutOnCEL", []pluginv1alpha1.Plugin{plugin("bad", withTimeout(celHook(`Domain{}`), 1e9))},
			[]string{"spec.launcherHooks[0].timeout"}},
		{"DuplicateName", []pluginv1alpha1.Plugin{plugin("twice"), plugin("twice")},
			[]string{`plugin "twice": handed to the launcher twice`}},
		{"EveryProblemListed", []pluginv1alpha1.Plugin{
			plugin("one", celHook(`nope(`)),
			withPluginCondition(plugin("two"), `1`),
		}, []string{`plugin "one"`, `plugin "two"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pipeline.New(tc.plugins, pipeline.Options{})
			mustContain(t, err, tc.want...)
		})
	}
}

func TestNewCompilesOnceThroughSharedEnv(t *testing.T) {
	env, err := celenv.New(celenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	expr := `Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`
	first, err := env.DomainTransform(expr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pipeline.New([]pluginv1alpha1.Plugin{plugin("cached", celHook(expr))}, pipeline.Options{CEL: env}); err != nil {
		t.Fatal(err)
	}
	again, err := env.DomainTransform(expr)
	if err != nil {
		t.Fatal(err)
	}
	if first != again {
		t.Errorf("the shared environment lost its cached program")
	}
}

func TestValidateListsEveryProblemByFieldPath(t *testing.T) {
	env, err := celenv.New(celenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := plugin("", celHook(`Domain{Name: 1}`), pluginv1alpha1.LauncherHook{})
	p.Spec.FailureStrategy = "Sometimes"
	p.Spec.LauncherHooks[0].Timeout = &metav1.Duration{Duration: 1e9}
	errs := pipeline.Validate(&p, env)
	want := map[string]bool{
		"metadata.name":                        false,
		"spec.failureStrategy":                 false,
		"spec.launcherHooks[0].timeout":        false,
		"spec.launcherHooks[0].cel.expression": false,
		"spec.launcherHooks[1]":                false,
	}
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

func TestValidateOrdersProblemsByFieldPath(t *testing.T) {
	env, err := celenv.New(celenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hooks := make([]pluginv1alpha1.LauncherHook, 11)
	for i := range hooks {
		hooks[i] = celHook(`Domain{}`)
	}
	hooks[10] = pluginv1alpha1.LauncherHook{} // structural problem
	hooks[2] = celHook(`Domain{Name: 1}`)     // CEL problem
	p := plugin("ordered", hooks...)
	p.Spec.Condition = `1`           // CEL problem
	p.Spec.FailureStrategy = "Often" // structural problem
	var got []string
	for _, e := range pipeline.Validate(&p, env) {
		got = append(got, e.Field)
	}
	want := []string{"spec.condition", "spec.failureStrategy", "spec.launcherHooks[2].cel.expression", "spec.launcherHooks[10]"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("problems in order %v, want %v", got, want)
	}
}
