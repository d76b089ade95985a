// SPDX-License-Identifier: Apache-2.0

package celenv

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// manyLabels is a VMI whose owner gave it n labels, none of them under
// example.com/, plus the one the guide's examples look for when withTuning.
func manyLabels(n int, withTuning bool) map[string]string {
	labels := make(map[string]string, n+1)
	for i := range n {
		labels[fmt.Sprintf("owner.example.org/l%06d", i)] = "v"
	}
	if withTuning {
		labels["example.com/tuning"] = "cpu"
	}
	return labels
}

// TestCommonConditionsOnAVMIWithManyLabels: the conditions plugin authors
// write over labels (in, exists, all) give the right answer on a VMI with
// 80,000 labels, within the condition cost limit: a comprehension over the
// labels costs a few units a label, so it is not stopped.
func TestCommonConditionsOnAVMIWithManyLabels(t *testing.T) {
	e := newEnv(t, Options{})
	for _, tc := range []struct {
		expr          string
		with, without bool
	}{
		{`"example.com/tuning" in vmi.Labels`, true, false},
		{`vmi.Labels.exists(k, k.startsWith("example.com/"))`, true, false},
		{`vmi.Labels.all(k, !k.startsWith("example.com/"))`, false, true},
		{`vmi.Labels.exists(k, k == "example.com/tuning" && vmi.Labels[k] == "cpu")`, true, false},
	} {
		for _, tuned := range []bool{true, false} {
			want := tc.without
			if tuned {
				want = tc.with
			}
			if got := evalCondition(t, e, tc.expr, vmiWithLabels(manyLabels(80_000, tuned))); got != want {
				t.Errorf("%s on 80,000 labels (tuning label %v) = %v, want %v", tc.expr, tuned, got, want)
			}
		}
	}
}

// TestAdmittedConditionIsStoppedOnAHugeVMI: a condition admitted because its
// estimate assumes at most 256 labels, nested over the labels, is stopped on
// a VMI with 5,000 by the condition cost limit, with an error that names the
// expression and wraps ErrCostLimitExceeded; the same Env then evaluates it
// on a small VMI.
func TestAdmittedConditionIsStoppedOnAHugeVMI(t *testing.T) {
	e := newEnv(t, Options{})
	const expr = `vmi.Labels.all(a, vmi.Labels.all(b, size(a) + size(b) > 0))`
	c, err := e.Condition(expr)
	if err != nil {
		t.Fatalf("the test needs an admitted condition: %v", err)
	}
	_, err = c.Eval(t.Context(), vmiWithLabels(manyLabels(5_000, false)))
	if !errors.Is(err, ErrCostLimitExceeded) {
		t.Fatalf("5,000 labels: want ErrCostLimitExceeded, got %v", err)
	}
	for _, want := range []string{strconv.Quote(expr), fmt.Sprintf("limit %d", DefaultConditionCostLimit)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if ok, err := c.Eval(t.Context(), vmiWithLabels(manyLabels(10, false))); err != nil || !ok {
		t.Fatalf("10 labels afterwards: %v, %v", ok, err)
	}
}

// TestGuestDefinitionBuildingListsIsStopped: an admitted GuestDefinition
// expression that builds a list of lists from the labels (admitted because
// its estimate assumes at most 256) is stopped by the cost limit on a VMI
// with 80,000 labels, and leaves the domain unchanged.
func TestGuestDefinitionBuildingListsIsStopped(t *testing.T) {
	e := newEnv(t, Options{})
	for _, expr := range []string{
		`Domain{Description: vmi.Labels.map(a, vmi.Labels.map(b, size(a) + size(b))).exists(l, l.exists(n, n == 0)) ? "a" : "b"}`,
	} {
		tr, err := e.DomainTransform(expr)
		if err != nil {
			t.Fatalf("the test needs an admitted expression: %v", err)
		}
		d := loadDomain(t, "testdata/domain-small.xml")
		err = tr.Apply(t.Context(), vmiWithLabels(manyLabels(80_000, false)), d)
		if !errors.Is(err, ErrCostLimitExceeded) || !strings.Contains(err.Error(), strconv.Quote(expr)) {
			t.Fatalf("%s on 80,000 labels: want ErrCostLimitExceeded naming the expression, got %v", expr, err)
		}
		if d.Description != "" {
			t.Fatalf("%s: a stopped Apply changed the domain", expr)
		}
	}
}
