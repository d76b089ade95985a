// SPDX-License-Identifier: Apache-2.0

package pipeline_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/kubevirt-plugins/framework/api/celenv"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
)

// lines is a logger keeping every line it is given.
type lines struct {
	mu  sync.Mutex
	all []string
}

func (l *lines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.all = append(l.all, args)
	}, funcr.Options{})
}

func (l *lines) with(substr string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.all {
		if strings.Contains(s, substr) {
			out = append(out, s)
		}
	}
	return out
}

// withChecked puts on p the checked forms of its condition and CEL
// expressions, made by handler, as virt-handler does.
func withChecked(t *testing.T, handler *celenv.Env, p pluginv1alpha1.Plugin) pluginv1alpha1.Plugin {
	t.Helper()
	set := celenv.CheckedSet{Conditions: map[string][]byte{}, Transforms: map[string][]byte{}}
	checked, err := handler.CheckedCondition(p.Spec.Condition)
	if err != nil {
		t.Fatal(err)
	}
	set.Conditions[p.Spec.Condition] = checked
	for _, h := range p.Spec.LauncherHooks {
		if checked, err = handler.CheckedDomainTransform(h.CEL.Expression); err != nil {
			t.Fatal(err)
		}
		set.Transforms[h.CEL.Expression] = checked
	}
	data, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	p.Annotations = map[string]string{pluginv1alpha1.CheckedCELAnnotation: string(data)}
	return p
}

// TestLauncherSaysWhetherItPlannedCheckedExpressionsOrCompiledText: a
// Plugin virt-handler handed over with the checked forms of its expressions
// is planned from them, one without them (an older virt-handler) is
// compiled from its text, and one line says which; both run alike.
func TestLauncherSaysWhetherItPlannedCheckedExpressionsOrCompiledText(t *testing.T) {
	handler, err := celenv.New(celenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	plain := plugin("tuning", celHook(`Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`))
	plain.Spec.Condition = `vmi.Name != ""`
	vmi, domain := testVMI(t), testDomain(t)
	for _, tc := range []struct {
		name   string
		plugin pluginv1alpha1.Plugin
		want   string
	}{
		{"checked", withChecked(t, handler, plain), `"plannedFromChecked"=2 "compiledFromText"=0`},
		{"text", plain, `"plannedFromChecked"=0 "compiledFromText"=2`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &lines{}
			p, err := pipeline.New([]pluginv1alpha1.Plugin{tc.plugin}, pipeline.Options{Logger: log.logger()})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if said := log.with("CEL expressions"); len(said) != 1 || !strings.Contains(said[0], tc.want) {
				t.Fatalf("lines about the CEL expressions: %q, want one with %s", said, tc.want)
			}
			out, err := p.GuestDefinition(t.Context(), vmi, domain, pipeline.Boot)
			if err != nil || out.CPU == nil || out.CPU.Mode != "host-passthrough" {
				t.Fatalf("GuestDefinition: %v, CPU %+v", err, out.CPU)
			}
		})
	}
}

// TestCheckedFormsThatDoNotPlanFallBackToTheText: a checked form this
// launcher cannot plan is reported and the text is compiled.
func TestCheckedFormsThatDoNotPlanFallBackToTheText(t *testing.T) {
	p := plugin("tuning", celHook(`Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`))
	p.Annotations = map[string]string{pluginv1alpha1.CheckedCELAnnotation: `{"transforms":{"Domain{CPU: DomainCPU{Mode: \"host-passthrough\"}}":"bm90IGEgY2hlY2tlZCBleHByZXNzaW9u"}}`}
	log := &lines{}
	pl, err := pipeline.New([]pluginv1alpha1.Plugin{p}, pipeline.Options{Logger: log.logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()
	if said := log.with("checked forms from virt-handler refused"); len(said) != 1 || !strings.Contains(said[0], `"compiledFromText"=1`) {
		t.Fatalf("lines %q, want one saying the checked form was refused and the text compiled", log.all)
	}
	out, err := pl.GuestDefinition(t.Context(), testVMI(t), testDomain(t), pipeline.Boot)
	if err != nil || out.CPU == nil || out.CPU.Mode != "host-passthrough" {
		t.Fatalf("GuestDefinition: %v", err)
	}
}
