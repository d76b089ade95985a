// SPDX-License-Identifier: Apache-2.0

package pipeline_test

import (
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/kubevirt-plugins/framework/api/celenv"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
)

func TestNewRejectsAPluginHandedTwice(t *testing.T) {
	_, err := pipeline.New([]pluginv1alpha1.Plugin{plugin("twice"), plugin("twice")}, pipeline.Options{})
	mustContain(t, err, `plugin "twice": handed to the launcher twice`)
}

// TestPluginThatDoesNotCompileFailsOnlyItsOwnHooks hands the launcher a
// Plugin that admission would have refused (or that an older CEL
// environment accepted): New succeeds, that plugin's hooks fail under Fail
// and are skipped under Ignore, each with a *HookError naming it and the
// field, and the other plugin runs.
func TestPluginThatDoesNotCompileFailsOnlyItsOwnHooks(t *testing.T) {
	withPluginCondition := func(p pluginv1alpha1.Plugin, c string) pluginv1alpha1.Plugin {
		p.Spec.Condition = c
		return p
	}
	preboot := celHook(`Domain{}`)
	preboot.CEL.HookPoint = pb
	for _, tc := range []struct {
		name  string
		bad   func(strategy pluginv1alpha1.FailureStrategy) pluginv1alpha1.Plugin
		point pluginv1alpha1.LauncherHookPoint
		want  []string
	}{
		{"ExpressionDoesNotCompile", func(s pluginv1alpha1.FailureStrategy) pluginv1alpha1.Plugin {
			return plugin("bad", withStrategy(celHook(`Domain{CPU: DomainCPU{Mode: 1}}`), s))
		}, gd, []string{"spec.launcherHooks[0].cel.expression"}},
		{"ExpressionNotADomain", func(s pluginv1alpha1.FailureStrategy) pluginv1alpha1.Plugin {
			return plugin("bad", withStrategy(celHook(`"host-passthrough"`), s))
		}, gd, []string{"spec.launcherHooks[0].cel.expression", "must return a Domain"}},
		{"ConditionNotBool", func(s pluginv1alpha1.FailureStrategy) pluginv1alpha1.Plugin {
			return withPluginCondition(plugin("bad", withStrategy(celHook(`Domain{}`), s)), `vmi.Name`)
		}, gd, []string{"spec.condition", "must evaluate to bool"}},
		{"HookConditionUnknownField", func(s pluginv1alpha1.FailureStrategy) pluginv1alpha1.Plugin {
			return plugin("bad", withStrategy(withCondition(celHook(`Domain{}`), `vmi.NoSuchField == 1`), s))
		}, gd, []string{"spec.launcherHooks[0].condition"}},
		{"CELAtPreBoot", func(s pluginv1alpha1.FailureStrategy) pluginv1alpha1.Plugin {
			return plugin("bad", withStrategy(preboot, s))
		}, pb, []string{"spec.launcherHooks[0].cel.hookPoint"}},
		{"SocketOfAnotherPlugin", func(s pluginv1alpha1.FailureStrategy) pluginv1alpha1.Plugin {
			return plugin("bad", withStrategy(sidecarHook(declared("other", "hook.sock"), pb), s))
		}, pb, []string{"spec.launcherHooks[0].sidecar.socketPath"}},
		{"TimeoutOnCEL", func(s pluginv1alpha1.FailureStrategy) pluginv1alpha1.Plugin {
			return plugin("bad", withStrategy(withTimeout(celHook(`Domain{}`), 1e9), s))
		}, gd, []string{"spec.launcherHooks[0].timeout"}},
	} {
		for _, strategy := range []pluginv1alpha1.FailureStrategy{pluginv1alpha1.Fail, pluginv1alpha1.Ignore} {
			t.Run(tc.name+"/"+string(strategy), func(t *testing.T) {
				root := socketRoot(t)
				good := &sidecar{}
				errs := &errorLog{}
				p, err := pipeline.New([]pluginv1alpha1.Plugin{
					tc.bad(strategy),
					plugin("good", sidecarHook(serve(t, root, "good", "hook.sock", good), gd, pb)),
				}, pipeline.Options{SocketRoot: root, SocketWaitBudget: time.Second, Logger: logr.New(errs)})
				if err != nil {
					t.Fatalf("one plugin that does not compile made New fail: %v", err)
				}
				t.Cleanup(func() { _ = p.Close() })
				switch tc.point {
				case gd:
					_, err = p.GuestDefinition(t.Context(), testVMI(t), testDomain(t), pipeline.Boot)
				case pb:
					err = p.PreBoot(t.Context(), testVMI(t), pipeline.Artifacts{})
				}
				if strategy == pluginv1alpha1.Ignore {
					if err != nil || good.calls() != 1 {
						t.Fatalf("Ignore: want the broken hook skipped and the other plugin run, got %v, %d calls", err, good.calls())
					}
					// The skip reaches the host's logger as the hook's
					// *HookError (New logged the plain compile error
					// before the call).
					var skipped []error
					for _, e := range errs.logged() {
						if he := (*pipeline.HookError)(nil); errors.As(e, &he) {
							skipped = append(skipped, e)
						}
					}
					if len(skipped) != 1 {
						t.Fatalf("Ignore: want one *HookError logged for the skipped hook, got %d in %v", len(skipped), errs.logged())
					}
					err = skipped[0]
				}
				var he *pipeline.HookError
				if !errors.As(err, &he) || he.Plugin != "bad" || he.HookIndex != 0 || he.HookPoint != tc.point {
					t.Fatalf("want a *HookError of plugin bad, hook 0 at %s, got %#v (%v)", tc.point, he, err)
				}
				mustContain(t, err, append([]string{`plugin "bad" launcher hook #0`, "does not compile in this launcher"}, tc.want...)...)
				if strategy == pluginv1alpha1.Ignore {
					return
				}
				if good.calls() != 0 {
					t.Errorf("the chain went on after a Fail hook")
				}
				// The other plugin's hooks at a point the broken one does
				// not handle run as usual.
				other := pb
				if tc.point == pb {
					other = gd
				}
				if other == pb {
					err = p.PreBoot(t.Context(), testVMI(t), pipeline.Artifacts{})
				} else {
					_, err = p.GuestDefinition(t.Context(), testVMI(t), testDomain(t), pipeline.Boot)
				}
				if err != nil || good.calls() != 1 {
					t.Errorf("at %s, where the broken plugin has no hook: got %v, %d calls of the other plugin", other, err, good.calls())
				}
			})
		}
	}
}

func withStrategy(h pluginv1alpha1.LauncherHook, s pluginv1alpha1.FailureStrategy) pluginv1alpha1.LauncherHook {
	h.FailureStrategy = s
	return h
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
