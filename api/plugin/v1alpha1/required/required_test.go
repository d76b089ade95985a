// SPDX-License-Identifier: Apache-2.0

package required_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubevirt-plugins/framework/api/celenv"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/api/plugin/v1alpha1/required"
)

func vmi(annotation string, labels map[string]string) *kubevirtv1.VirtualMachineInstance {
	v := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm", Labels: labels}}
	if annotation != "" {
		v.Annotations = map[string]string{required.Annotation: annotation}
	}
	return v
}

// ready is a Plugin whose Ready condition is True for its generation.
func ready(name, condition string) *pluginv1alpha1.Plugin {
	p := &pluginv1alpha1.Plugin{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 2}, Spec: pluginv1alpha1.PluginSpec{Condition: condition}}
	p.Status.Conditions = []metav1.Condition{{Type: pluginv1alpha1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 2, Reason: "Ready"}}
	return p
}

func TestRequiredNamesAreTheAnnotationsCommaSeparatedPluginNames(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  []string
		err   string
	}{
		{"", nil, ""},
		{"disk-encryption", []string{"disk-encryption"}, ""},
		{" a , b,a,, c.example ", []string{"a", "b", "c.example"}, ""},
		{"a,Not_A_Name", nil, `annotation plugin.kubevirt.io/required: "Not_A_Name" is not a Plugin name`},
	} {
		got, err := required.Names(vmi(tc.value, nil))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "VMI ns/vm") {
				t.Errorf("%q: error %v, want one naming the VMI and saying %q", tc.value, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%q: %q, %v; want %q", tc.value, got, err, tc.want)
		}
	}
}

// TestRequiredPluginMissingNotReadyOrNotSelectingTheVMIIsUnmet: each way a
// required Plugin can fail the VMI is named, with why; the ones satisfied
// are not listed.
func TestRequiredPluginMissingNotReadyOrNotSelectingTheVMIIsUnmet(t *testing.T) {
	env, err := celenv.New(celenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	eval := func(ctx context.Context, expr string, v *kubevirtv1.VirtualMachineInstance) (bool, error) {
		c, err := env.Condition(expr)
		if err != nil {
			return false, err
		}
		return c.Eval(ctx, v)
	}
	notReady := ready("not-ready", "")
	notReady.Status.Conditions[0].Status, notReady.Status.Conditions[0].Message = metav1.ConditionFalse, "references missing"
	stale := ready("stale", "")
	stale.Generation = 3
	deleting := ready("deleting", "")
	deleting.DeletionTimestamp = &metav1.Time{}
	noStatus := ready("no-status", "")
	noStatus.Status.Conditions = nil
	plugins := []*pluginv1alpha1.Plugin{
		ready("fine", `"tier" in vmi.Labels`), notReady, stale, deleting, noStatus,
		ready("other-tier", `vmi.Labels["tier"] == "silver"`), ready("broken-condition", `vmi.Labels["absent"] == "x"`),
	}
	v := vmi("fine,absent,not-ready,stale,deleting,no-status,other-tier,broken-condition", map[string]string{"tier": "gold"})
	err = required.Check(t.Context(), v, plugins, required.Options{CheckReady: true, EvalCondition: eval})
	rerr, ok := errors.AsType[*required.Error](err)
	if !ok {
		t.Fatalf("error %v, want a *required.Error", err)
	}
	want := []string{
		`plugin "absent" Missing: no Plugin of that name exists`,
		`plugin "not-ready" NotReady: Ready is False: Ready: references missing`,
		`plugin "stale" NotReady: Ready describes generation 2, the Plugin is at generation 3`,
		`plugin "deleting" Missing: the Plugin is being deleted`,
		`plugin "no-status" NotReady: it has no Ready condition yet`,
		`plugin "other-tier" NotSelected: its condition "vmi.Labels[\"tier\"] == \"silver\"" is false for this VMI`,
		`plugin "broken-condition" NotSelected: its condition "vmi.Labels[\"absent\"] == \"x\"" cannot be evaluated for this VMI`,
	}
	if len(rerr.Unmet) != len(want) {
		t.Fatalf("unmet %v, want %d", rerr.Unmet, len(want))
	}
	for i, w := range want {
		if got := rerr.Unmet[i].String(); !strings.HasPrefix(got, w) {
			t.Errorf("unmet[%d] = %q, want %q...", i, got, w)
		}
	}
	if !strings.HasPrefix(err.Error(), "VMI ns/vm requires plugins (annotation plugin.kubevirt.io/required) that are not satisfied: ") {
		t.Errorf("error %q does not name the VMI and the annotation", err)
	}

	// From files there is no status: readiness is not checked.
	if err := required.Check(t.Context(), vmi("no-status,fine", map[string]string{"tier": "gold"}), plugins, required.Options{EvalCondition: eval}); err != nil {
		t.Errorf("without CheckReady: %v", err)
	}
	// A VMI that requires nothing needs nothing.
	if err := required.Check(t.Context(), vmi("", nil), nil, required.Options{}); err != nil {
		t.Errorf("no annotation: %v", err)
	}
}
