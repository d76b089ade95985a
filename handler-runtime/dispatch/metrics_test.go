// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/tools/record"

	"github.com/kubevirt-plugins/framework/api/celenv"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

func TestTwoDispatchersOnOneRegistererShareTheCollectors(t *testing.T) {
	reg := prometheus.NewRegistry()
	m1, err := newMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := newMetrics(reg)
	if err != nil {
		t.Fatalf("second registration on the same registry: %v", err)
	}
	if m1.callDuration != m2.callDuration || m1.vmiWait != m2.vmiWait {
		t.Fatal("the second registration did not reuse the collectors already registered")
	}
}

func TestRegisteringOverADifferentCollectorOfTheSameNameFails(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{
		Name: MetricIgnoredFailures,
		Help: "something else",
	}))
	if _, err := newMetrics(reg); err == nil {
		t.Fatal("registration over a different collector of the same name succeeded")
	}
}

// TestConditionStoppedByTheCostLimitIsCountedAndNamed: a node hook's
// condition admitted under the estimate's bound of 256 labels, nested over
// the labels, on a VMI whose owner gave it 5,000, is stopped by the
// condition cost limit: the dispatch fails before any call with a HookError
// naming the plugin, the hook and the condition, an Event says so, the stop
// is counted per plugin and hook point, and a VMI with a few labels is
// dispatched as before.
func TestConditionStoppedByTheCostLimitIsCountedAndNamed(t *testing.T) {
	const cond = `vmi.Labels.all(a, vmi.Labels.all(b, size(a) + size(b) > 0))`
	root := socketRoot(t)
	j := &journal{}
	sock := serve(t, root, &hookServer{name: "walker", journal: j})
	h := nodeHook(sock, pluginv1alpha1.PreVMStart)
	h.Condition = cond
	reg := prometheus.NewPedanticRegistry()
	rec := record.NewFakeRecorder(10)
	d, err := New(Options{
		Plugins:       &staticPlugins{snap: storeSnapshot(plugin("label-walker", "", h))},
		SocketRoots:   []string{root},
		EventRecorder: rec,
		Registerer:    reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	labels := map[string]string{}
	for i := range 5000 {
		labels[fmt.Sprintf("owner.example.org/l%d", i)] = "v"
	}
	err = d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi("huge", labels), NodeContext{})
	if !errors.Is(err, celenv.ErrCostLimitExceeded) {
		t.Fatalf("Dispatch = %v, want an error wrapping celenv.ErrCostLimitExceeded", err)
	}
	for _, w := range []string{`plugin "label-walker" node hook #0`, strconv.Quote(cond), fmt.Sprintf("limit %d", celenv.DefaultConditionCostLimit)} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
	if calls := j.all(); len(calls) != 0 {
		t.Fatalf("calls %v after a stopped condition", calls)
	}
	events := drain(rec)
	if len(events) != 1 || !strings.Contains(events[0], "Warning "+ReasonNodeHookFailed) || !strings.Contains(events[0], "cost limit") {
		t.Fatalf("Events %q, want one %s naming the cost limit", events, ReasonNodeHookFailed)
	}
	if err := d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi("small", map[string]string{"a": "b"}), NodeContext{}); err != nil {
		t.Fatalf("a VMI with one label: %v", err)
	}
	if len(j.all()) != 1 {
		t.Fatal("the hook was not called for the VMI with one label")
	}
	want := fmt.Sprintf(`
# HELP %[1]s Evaluations of a plugin's conditions stopped by the CEL cost limit, per plugin and hook point.
# TYPE %[1]s counter
%[1]s{hook_point="PreVMStart",plugin="label-walker"} 1
`, MetricCELCostLimitExceeded)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), MetricCELCostLimitExceeded); err != nil {
		t.Fatal(err)
	}
}
