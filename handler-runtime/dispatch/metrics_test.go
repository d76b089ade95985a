// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
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
