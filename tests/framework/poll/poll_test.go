package poll

import (
	"context"
	"errors"
	"testing"
	"time"
)

var errNotYet = errors.New("not yet")

func TestUntilContextReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	err := UntilContext(t.Context(), time.Minute, func() error {
		if calls++; calls < 3 {
			return errNotYet
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("err %v after %d calls, want nil after 3", err, calls)
	}
}

func TestUntilContextGivesUpAtTheTimeoutWithTheLastError(t *testing.T) {
	err := UntilContext(t.Context(), 3*Interval, func() error { return errNotYet })
	if !errors.Is(err, errNotYet) {
		t.Fatalf("err %v, want the condition's last error", err)
	}
}

func TestUntilContextEndsAtOnceWithTheContextsCause(t *testing.T) {
	exited := errors.New("the process exited")
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(exited)
	start := time.Now()
	err := UntilContext(ctx, time.Minute, func() error { return errNotYet })
	if !errors.Is(err, exited) || !errors.Is(err, errNotYet) {
		t.Fatalf("err %v, want the cause and the condition's last error", err)
	}
	if took := time.Since(start); took > 10*Interval {
		t.Fatalf("took %s after the context ended", took)
	}
}

// A cleanup waits too, after the test's context has ended.
func TestUntilWaitsInACleanup(t *testing.T) {
	calls := 0
	t.Cleanup(func() {
		Until(t, "the third call", time.Minute, func() error {
			if calls++; calls < 3 {
				return errNotYet
			}
			return nil
		})
		if calls != 3 {
			t.Errorf("%d calls, want 3", calls)
		}
	})
}
