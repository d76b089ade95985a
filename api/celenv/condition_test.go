// SPDX-License-Identifier: Apache-2.0

package celenv

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func newEnv(t testing.TB, opts Options) *Env {
	t.Helper()
	e, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func vmiWithLabels(labels map[string]string) *kubevirtv1.VirtualMachineInstance {
	return &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm1", Namespace: "ns", Labels: labels}}
}

func evalCondition(t *testing.T, e *Env, expr string, vmi *kubevirtv1.VirtualMachineInstance) bool {
	t.Helper()
	c, err := e.Condition(expr)
	if err != nil {
		t.Fatalf("Condition(%q): %v", expr, err)
	}
	got, err := c.Eval(t.Context(), vmi)
	if err != nil {
		t.Fatalf("Eval(%q): %v", expr, err)
	}
	return got
}

// compileError asserts err is a *CompileError with the given reason and a
// message containing every one of want.
func compileError(t *testing.T, err error, reason string, want ...string) *CompileError {
	t.Helper()
	var ce *CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("want a *CompileError (%s), got %v", reason, err)
	}
	if ce.Reason != reason {
		t.Fatalf("reason = %q, want %q (message: %s)", ce.Reason, reason, ce.Message)
	}
	for _, w := range want {
		if !strings.Contains(ce.Message, w) {
			t.Fatalf("message %q does not contain %q", ce.Message, w)
		}
	}
	if !strings.Contains(ce.Error(), strconv.Quote(ce.Expression)) {
		t.Fatalf("Error() %q does not name the expression %q", ce.Error(), ce.Expression)
	}
	return ce
}

// TestGuideExamples runs the expressions of the user guide verbatim.
func TestGuideExamples(t *testing.T) {
	e := newEnv(t, Options{})
	const (
		pluginCondition = `"example.com/tuning" in vmi.Labels`
		hookCondition   = `vmi.Labels["example.com/tuning"] == "cpu"`
		transform       = `Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`
	)
	for _, tc := range []struct {
		name             string
		labels           map[string]string
		plugin, hookWant bool
	}{
		{name: "tuning=cpu", labels: map[string]string{"example.com/tuning": "cpu"}, plugin: true, hookWant: true},
		{name: "tuning=memory", labels: map[string]string{"example.com/tuning": "memory"}, plugin: true, hookWant: false},
		{name: "other label", labels: map[string]string{"app": "db"}, plugin: false},
		{name: "no labels", plugin: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := vmiWithLabels(tc.labels)
			if got := evalCondition(t, e, pluginCondition, vmi); got != tc.plugin {
				t.Fatalf("%s = %v, want %v", pluginCondition, got, tc.plugin)
			}
			if !tc.plugin {
				return // the hook condition only runs when the plugin applies
			}
			if got := evalCondition(t, e, hookCondition, vmi); got != tc.hookWant {
				t.Fatalf("%s = %v, want %v", hookCondition, got, tc.hookWant)
			}
		})
	}

	tr, err := e.DomainTransform(transform)
	if err != nil {
		t.Fatal(err)
	}
	domain := loadDomain(t, "testdata/domain-small.xml")
	if err := tr.Apply(t.Context(), vmiWithLabels(nil), domain); err != nil {
		t.Fatal(err)
	}
	if domain.CPU == nil || domain.CPU.Mode != "host-passthrough" {
		t.Fatalf("CPU = %+v, want mode host-passthrough", domain.CPU)
	}
}

// TestConditionSeesOnlyVMI: a condition has vmi and nothing else, neither
// domainSpec nor the libvirtxml types.
func TestConditionSeesOnlyVMI(t *testing.T) {
	e := newEnv(t, Options{})
	for _, tc := range []struct{ expr, want string }{
		{`domainSpec.Name == "x"`, "undeclared reference to 'domainSpec'"},
		{`vmi.Name == domainSpec.Name`, "undeclared reference to 'domainSpec'"},
		{`Domain{Name: "x"}.Name == "x"`, "undeclared reference to 'Domain'"},
	} {
		_, err := e.Condition(tc.expr)
		_ = compileError(t, err, ReasonType, tc.want)
	}
	// The same reference is fine in a GuestDefinition expression.
	if _, err := e.DomainTransform(`Domain{Name: domainSpec.Name}`); err != nil {
		t.Fatal(err)
	}
}

func TestConditionMustBeBool(t *testing.T) {
	e := newEnv(t, Options{})
	for _, tc := range []struct{ expr, gotType string }{
		{`vmi.Name`, "string"},
		{`vmi.Labels["example.com/tuning"]`, "string"},
		{`vmi.Spec.Domain.CPU.Cores`, "uint"},
		{`vmi.Labels`, "map(string, string)"},
		{`1`, "int"},
	} {
		_, err := e.Condition(tc.expr)
		_ = compileError(t, err, ReasonType, "must evaluate to bool", tc.gotType)
	}
}

func TestSyntaxErrorRejected(t *testing.T) {
	e := newEnv(t, Options{})
	_, err := e.Condition(`vmi.Labels[`)
	_ = compileError(t, err, ReasonSyntax, "Syntax error")
	_, err = e.DomainTransform(`Domain{CPU: }`)
	_ = compileError(t, err, ReasonSyntax, "Syntax error")
}

// TestConditionReadsGoFieldNames covers the Go field names and how the Go
// types that CEL has no direct equivalent for read.
func TestConditionReadsGoFieldNames(t *testing.T) {
	e := newEnv(t, Options{})
	vmi := loadVMI(t, "testdata/vmi-tuned.yaml")
	for _, tc := range []struct {
		name, expr string
		want       bool
	}{
		{"promoted ObjectMeta field", `vmi.Name == "db-0" && vmi.Namespace == "prod"`, true},
		{"embedded struct by name", `vmi.ObjectMeta.Name == "db-0"`, true},
		{"nested spec", `vmi.Spec.Domain.CPU.Cores == 4u && vmi.Spec.Domain.CPU.Model == "host-passthrough"`, true},
		{"uint against int literal", `vmi.Spec.Domain.CPU.Cores > 2`, true},
		{"list comprehension", `vmi.Spec.Domain.Devices.Disks.exists(d, d.Name == "data" && d.Disk.Bus == "scsi")`, true},
		{"pointer to scalar", `vmi.Spec.Domain.Devices.Disks[0].BootOrder == 1u`, true},
		{"unset pointer to scalar reads zero", `vmi.Spec.Domain.Devices.Disks[1].BootOrder == 0u`, true},
		{"unset pointer to struct reads empty", `vmi.Spec.Domain.Devices.Disks[0].CDRom.Bus == ""`, true},
		{"has on unset pointer", `!has(vmi.Spec.Domain.Devices.Disks[0].CDRom)`, true},
		{"has on set pointer", `has(vmi.Spec.Domain.Devices.Disks[0].Disk)`, true},
		{"field through nil embedded pointer", `vmi.Spec.Domain.Devices.GPUs[0].ClaimName == ""`, true},
		{"field of kubevirt type sharing a name with a core/v1 type", `vmi.Spec.Volumes[1].PersistentVolumeClaim.Hotpluggable`, true},
		{"promoted field of the core/v1 type", `vmi.Spec.Volumes[1].PersistentVolumeClaim.ClaimName == "db-0-data"`, true},
		{"quantity reads as its string", `vmi.Spec.Domain.Resources.Requests["memory"] == "8Gi"`, true},
		{"quantity pointer reads as its string", `vmi.Spec.Domain.Memory.Guest == "8Gi"`, true},
		{"metav1.Time reads as timestamp", `vmi.CreationTimestamp == timestamp("2025-03-14T09:26:53Z")`, true},
		{"unset metav1.Time", `!has(vmi.DeletionTimestamp)`, true},
		{"status", `vmi.Status.Phase == "Running" && vmi.Status.NodeName == "worker-2"`, true},
		{"annotations map", `vmi.Annotations["kubevirt.io/latest-observed-api-version"] == "v1"`, true},
		{"label absent", `"example.com/other" in vmi.Labels`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := evalCondition(t, e, tc.expr, vmi); got != tc.want {
				t.Fatalf("%s = %v, want %v", tc.expr, got, tc.want)
			}
		})
	}
}

// TestConditionEvaluatesWholeVMI reads every non-zero field of whole VMI
// manifests through Go field names.
func TestConditionEvaluatesWholeVMI(t *testing.T) {
	e := newEnv(t, Options{CostLimit: 1 << 40})
	paths := map[string]func(testing.TB) string{
		"testdata/vmi-tuned.yaml":      func(testing.TB) string { return "testdata/vmi-tuned.yaml" },
		"vmi-fedora.yaml":              func(tb testing.TB) string { return sharedFixture(tb, "vmi-fedora.yaml") },
		"vmi-multus-multiple-net.yaml": func(tb testing.TB) string { return sharedFixture(tb, "vmi-multus-multiple-net.yaml") },
	}
	for name, path := range paths {
		t.Run(name, func(t *testing.T) {
			vmi := loadVMI(t, path(t))
			checks := leafChecks("vmi", reflectValue(vmi))
			if len(checks) < 15 {
				t.Fatalf("only %d leaves generated from %s", len(checks), name)
			}
			for _, check := range checks {
				if !evalCondition(t, e, check, vmi) {
					t.Errorf("%s is false", check)
				}
			}
			// And all of them as one condition.
			if !evalCondition(t, e, strings.Join(checks, " && "), vmi) {
				t.Error("the conjunction of all leaf checks is false")
			}
			// Another VMI must not satisfy them.
			if evalCondition(t, e, strings.Join(checks, " && "), vmiWithLabels(nil)) {
				t.Error("the conjunction holds on an empty VMI")
			}
		})
	}
}

// TestConditionEvalErrorIsReturned: evaluation errors (here a missing map key)
// are returned, not turned into false: the caller fails the operation.
func TestConditionEvalErrorIsReturned(t *testing.T) {
	e := newEnv(t, Options{})
	c, err := e.Condition(`vmi.Labels["example.com/tuning"] == "cpu"`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Eval(t.Context(), vmiWithLabels(nil))
	if err == nil || !strings.Contains(err.Error(), "no such key") || !strings.Contains(err.Error(), "example.com/tuning") {
		t.Fatalf("want a no-such-key error naming the expression, got %v", err)
	}
	if _, err := c.Eval(t.Context(), nil); err == nil {
		t.Fatal("Eval with a nil VMI did not fail")
	}
}
