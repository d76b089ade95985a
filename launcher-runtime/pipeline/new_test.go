package pipeline_test

import (
	"testing"

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
