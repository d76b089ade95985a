// SPDX-License-Identifier: Apache-2.0

package celenv

import (
	"testing"
)

// TestNewBuildsNoEnvironment: a process handed no expression pays for no
// CEL environment. Building one allocates tens of thousands of times.
func TestNewBuildsNoEnvironment(t *testing.T) {
	allocs := testing.AllocsPerRun(5, func() {
		if _, err := New(Options{}); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 20 {
		t.Fatalf("New allocated %.0f times, want at most 20: it built something no expression asked for", allocs)
	}
}

// TestEachKindBuildsOnlyItsEnvironment: compiling conditions does not build
// the GuestDefinition environment, nor the reverse.
func TestEachKindBuildsOnlyItsEnvironment(t *testing.T) {
	e := newEnv(t, Options{})
	if _, err := e.Condition(`vmi.Name == "x"`); err != nil {
		t.Fatal(err)
	}
	if e.conditions.env == nil || e.transforms.env != nil {
		t.Fatalf("after a condition: condition environment built %v, GuestDefinition environment built %v; want true, false",
			e.conditions.env != nil, e.transforms.env != nil)
	}
	e = newEnv(t, Options{})
	if _, err := e.DomainTransform(`Domain{Name: vmi.Name}`); err != nil {
		t.Fatal(err)
	}
	if e.conditions.env != nil || e.transforms.env == nil {
		t.Fatalf("after a transform: condition environment built %v, GuestDefinition environment built %v; want false, true",
			e.conditions.env != nil, e.transforms.env != nil)
	}
}

// TestFieldReadsDescribeOnlyTheTypesOnTheirPath: reading fields describes
// the types along the path and no other; a type named before any read met
// it (a struct literal) is searched for from the known types, and the search
// stops where it is found.
func TestFieldReadsDescribeOnlyTheTypesOnTheirPath(t *testing.T) {
	e := newEnv(t, Options{})
	c, err := e.Condition(`vmi.Spec.Domain.CPU.Cores > 1u && vmi.Spec.Domain.Devices.Disks.exists(d, d.Name == "data")`)
	if err != nil {
		t.Fatal(err)
	}
	g := e.conditions.types
	if g.expanded != 0 {
		t.Fatalf("a condition reading fields searched %d types for names", g.expanded)
	}
	// VirtualMachineInstance, its spec, DomainSpec, CPU, Devices, Disk; a
	// walk reaches about two hundred.
	if n := len(g.reachable); n > 20 {
		t.Fatalf("%d types described for a condition reading one path, want at most 20", n)
	}
	if ok, err := c.Eval(t.Context(), loadVMI(t, "testdata/vmi-tuned.yaml")); err != nil || !ok {
		t.Fatalf("Eval = %v, %v", ok, err)
	}

	if _, err := e.DomainTransform(`Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`); err != nil {
		t.Fatal(err)
	}
	// DomainCPU is a field of Domain: the search looks at Domain's fields.
	if g := e.transforms.types; g.expanded > 2 {
		t.Fatalf("naming DomainCPU searched %d types, want at most 2", g.expanded)
	}
}
