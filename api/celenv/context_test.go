// SPDX-License-Identifier: Apache-2.0

package celenv

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// cancelledMidway is a context that reports itself live on the first call to
// Err, as it is when an evaluation starts, while its Done channel is already
// closed: evaluation observes the cancellation only from inside a
// comprehension, deterministically.
type cancelledMidway struct {
	context.Context
	done  chan struct{}
	calls atomic.Int32
}

func newCancelledMidway() *cancelledMidway {
	c := &cancelledMidway{Context: context.Background(), done: make(chan struct{})} //nolint:forbidigo // the base the fixture replaces Done and Err of; never done itself
	close(c.done)
	return c
}

func (c *cancelledMidway) Done() <-chan struct{} { return c.done }

func (c *cancelledMidway) Err() error {
	if c.calls.Add(1) == 1 {
		return nil
	}
	return context.Canceled
}

func (c *cancelledMidway) Deadline() (time.Time, bool) { return time.Time{}, false }

func TestEvalHonoursContext(t *testing.T) {
	e := newEnv(t, Options{})
	vmi := vmiWithLabels(map[string]string{"example.com/tuning": "cpu"})
	for i := range 1000 {
		vmi.Labels[strings.Repeat("k", i%7)+string(rune('a'+i%26))+string(rune('a'+i/26))] = "v"
	}
	const loop = `vmi.Labels.all(k, k != "")`
	c, err := e.Condition(loop)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := e.DomainTransform(`Domain{Title: ` + loop + ` ? "t" : "f"}`)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("cancelled before", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := c.Eval(ctx, vmi); !errors.Is(err, context.Canceled) {
			t.Fatalf("Eval: want context.Canceled, got %v", err)
		}
		if err := tr.Apply(ctx, vmi, loadDomain(t, "testdata/domain-small.xml")); !errors.Is(err, context.Canceled) {
			t.Fatalf("Apply: want context.Canceled, got %v", err)
		}
	})
	t.Run("cancelled during a comprehension", func(t *testing.T) {
		_, err := c.Eval(newCancelledMidway(), vmi)
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted") {
			t.Fatalf("Eval: want an interruption wrapping context.Canceled, got %v", err)
		}
		d := loadDomain(t, "testdata/domain-small.xml")
		if err := tr.Apply(newCancelledMidway(), vmi, d); !errors.Is(err, context.Canceled) {
			t.Fatalf("Apply: want context.Canceled, got %v", err)
		}
		if d.Title != "" {
			t.Fatal("an interrupted Apply changed the domain")
		}
	})
	t.Run("live context", func(t *testing.T) {
		if ok, err := c.Eval(t.Context(), vmi); err != nil || !ok {
			t.Fatalf("Eval = %v, %v", ok, err)
		}
	})
}
