// SPDX-License-Identifier: Apache-2.0

package celenv

import (
	"sync"
	"testing"
)

func TestCompileOnceCache(t *testing.T) {
	e := newEnv(t, Options{})
	const expr = `vmi.Labels["example.com/tuning"] == "cpu"`
	c1, err := e.Condition(expr)
	if err != nil {
		t.Fatal(err)
	}
	if n := e.compilations.Load(); n != 1 {
		t.Fatalf("%d compilations after the first call, want 1", n)
	}
	c2, err := e.Condition(expr)
	if err != nil {
		t.Fatal(err)
	}
	if c1 != c2 {
		t.Fatal("second Condition call returned a different compilation")
	}
	if n := e.compilations.Load(); n != 1 {
		t.Fatalf("%d compilations after a repeated call, want 1", n)
	}

	// A rejected expression is not compiled again either.
	for range 3 {
		_, err := e.Condition(`vmi.Name`)
		_ = compileError(t, err, ReasonType, "must evaluate to bool")
	}
	if n := e.compilations.Load(); n != 2 {
		t.Fatalf("%d compilations, want 2", n)
	}

	// Conditions and transforms are cached apart: the same text is a
	// different program in each environment.
	const transform = `Domain{Name: vmi.Name}`
	if _, err := e.Condition(transform); err == nil {
		t.Fatal("a transform compiled as a condition")
	}
	t1, err := e.DomainTransform(transform)
	if err != nil {
		t.Fatal(err)
	}
	t2, err := e.DomainTransform(transform)
	if err != nil || t1 != t2 {
		t.Fatalf("second DomainTransform call: %v, same=%v", err, t1 == t2)
	}
	if n := e.compilations.Load(); n != 4 {
		t.Fatalf("%d compilations, want 4", n)
	}
}

func TestCompileOnceUnderConcurrency(t *testing.T) {
	e := newEnv(t, Options{})
	const expr = `"example.com/tuning" in vmi.Labels`
	var wg sync.WaitGroup
	got := make([]*Condition, 16)
	for i := range got {
		wg.Go(func() {
			c, err := e.Condition(expr)
			if err != nil {
				t.Error(err)
			}
			got[i] = c
		})
	}
	wg.Wait()
	for _, c := range got {
		if c != got[0] {
			t.Fatal("concurrent calls got different compilations")
		}
	}
	if n := e.compilations.Load(); n != 1 {
		t.Fatalf("%d compilations for one text, want 1", n)
	}
}

func TestCacheIsBounded(t *testing.T) {
	e := newEnv(t, Options{CacheSize: 2})
	exprs := []string{`vmi.Name == "a"`, `vmi.Name == "b"`, `vmi.Name == "c"`}
	for _, x := range exprs {
		if _, err := e.Condition(x); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.cache.len(); n != 2 {
		t.Fatalf("cache holds %d entries, want 2", n)
	}
	// The most recent two are still there, the first was evicted.
	for _, x := range exprs[1:] {
		if _, err := e.Condition(x); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.compilations.Load(); n != 3 {
		t.Fatalf("%d compilations, want 3 (b and c cached)", n)
	}
	if _, err := e.Condition(exprs[0]); err != nil {
		t.Fatal(err)
	}
	if n := e.compilations.Load(); n != 4 {
		t.Fatalf("%d compilations, want 4 (a recompiled after eviction)", n)
	}
}

func TestNewOptions(t *testing.T) {
	if _, err := New(Options{CacheSize: -1}); err == nil {
		t.Fatal("a negative cache size was accepted")
	}
	e := newEnv(t, Options{})
	if e.costLimit != DefaultCostLimit || e.cache.size != DefaultCacheSize {
		t.Fatalf("defaults: cost limit %d, cache size %d", e.costLimit, e.cache.size)
	}
}
