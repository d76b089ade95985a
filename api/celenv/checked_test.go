// SPDX-License-Identifier: Apache-2.0

package celenv

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// TestCheckedFormsArePlannedWithoutParsing: what one environment checked
// (virt-handler's), another (a launcher's) plans without compiling, with
// the same results as compiling the text, and caches under the text.
func TestCheckedFormsArePlannedWithoutParsing(t *testing.T) {
	const (
		condition = `vmi.Labels["example.com/tuning"] == "cpu" && vmi.Spec.Domain.Devices.Disks.exists(d, d.Name == "data")`
		// Carried reads of absent attributes (iothread=) and a literal
		// in a map() body: the launcher marks and plans them itself.
		transform = `Domain{CPU: DomainCPU{Mode: "host-passthrough"}, Devices: DomainDeviceList{Disks: domainSpec.Devices.Disks.map(d,
			DomainDisk{Device: d.Device, Source: d.Source, Target: d.Target, Driver: DomainDiskDriver{Name: d.Driver.Name, IOThread: d.Driver.IOThread, Cache: "none"}})}}`
	)
	handler := newEnv(t, Options{})
	checkedCondition, err := handler.CheckedCondition(condition)
	if err != nil {
		t.Fatal(err)
	}
	checkedTransform, err := handler.CheckedDomainTransform(transform)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := handler.CheckedCondition(condition); !bytes.Equal(again, checkedCondition) {
		t.Fatal("the checked form of one text differs from one call to the next")
	}

	launcher := newEnv(t, Options{})
	c, err := launcher.ConditionFromChecked(condition, checkedCondition)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := launcher.DomainTransformFromChecked(transform, checkedTransform)
	if err != nil {
		t.Fatal(err)
	}
	if n := launcher.compilations.Load(); n != 0 {
		t.Fatalf("%d compilations in the launcher, want 0", n)
	}
	if n := launcher.plannedFromChecked.Load(); n != 2 {
		t.Fatalf("%d expressions planned from their checked form, want 2", n)
	}
	if again, err := launcher.Condition(condition); err != nil || again != c {
		t.Fatalf("Condition after ConditionFromChecked: %v, same %v; want the cached one", err, again == c)
	}
	if again, err := launcher.DomainTransform(transform); err != nil || again != tr {
		t.Fatalf("DomainTransform after DomainTransformFromChecked: %v, same %v; want the cached one", err, again == tr)
	}
	if n := launcher.compilations.Load(); n != 0 {
		t.Fatalf("%d compilations in the launcher after the cached lookups, want 0", n)
	}

	vmi := loadVMI(t, "testdata/vmi-tuned.yaml")
	domain := loadDomain(t, "testdata/domain-small.xml")
	fromText, err := handler.DomainTransform(transform)
	if err != nil {
		t.Fatal(err)
	}
	want, err := fromText.Merge(t.Context(), vmi, domain)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tr.Merge(t.Context(), vmi, domain)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("planned from the checked form:\n%+v\ncompiled from the text:\n%+v", got.Devices.Disks, want.Devices.Disks)
	}
	textHolds, _ := mustCondition(t, handler, condition).Eval(t.Context(), vmi)
	checkedHolds, err := c.Eval(t.Context(), vmi)
	if err != nil || checkedHolds != textHolds {
		t.Fatalf("condition planned from its checked form = %v, %v; compiled from the text = %v", checkedHolds, err, textHolds)
	}
}

// TestCheckedFormThatDoesNotFitIsRefusedAndNotCached: bytes that are no
// checked expression, or one of the wrong kind, are refused; the text then
// compiles as usual.
func TestCheckedFormThatDoesNotFitIsRefusedAndNotCached(t *testing.T) {
	const transform = `Domain{Title: vmi.Name}`
	handler := newEnv(t, Options{})
	checkedCondition, err := handler.CheckedCondition(`vmi.Name == "x"`)
	if err != nil {
		t.Fatal(err)
	}
	launcher := newEnv(t, Options{})
	for name, checked := range map[string][]byte{
		"not a protobuf":        []byte("Domain{Title: vmi.Name}"),
		"empty":                 nil,
		"a condition's checked": checkedCondition,
	} {
		if _, err := launcher.DomainTransformFromChecked(transform, checked); err == nil {
			t.Errorf("%s: planned", name)
		}
	}
	var ce *CompileError
	if _, err := launcher.DomainTransformFromChecked(transform, checkedCondition); !errors.As(err, &ce) || ce.Reason != ReasonType {
		t.Fatalf("a condition's checked form as a transform: %v, want a type CompileError", err)
	}
	if _, err := launcher.DomainTransform(transform); err != nil {
		t.Fatalf("the text after refused checked forms: %v", err)
	}
	if n := launcher.compilations.Load(); n != 1 {
		t.Fatalf("%d compilations, want 1 (the text)", n)
	}
}

func mustCondition(t *testing.T, e *Env, expr string) *Condition {
	t.Helper()
	c, err := e.Condition(expr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
