// SPDX-License-Identifier: Apache-2.0

package collectors

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func counter(help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: "kubevirt_plugins_test_total", Help: help})
}

func TestIdenticalCollectorRegisteredTwiceIsShared(t *testing.T) {
	reg := prometheus.NewRegistry()
	first, err := Register(reg, counter("calls"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := Register(reg, counter("calls"))
	if err != nil {
		t.Fatalf("registering an identical collector again: %v", err)
	}
	if second != first {
		t.Fatal("the second registration did not return the collector already registered")
	}
}

func TestDifferentCollectorOfTheSameNameIsRefused(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := Register(reg, counter("calls")); err != nil {
		t.Fatal(err)
	}
	_, err := Register(reg, counter("other help"))
	if err == nil {
		t.Fatal("a different collector of the same name was accepted")
	}
	if _, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		t.Fatalf("error %v says already registered; want the descriptor clash", err)
	}
}
