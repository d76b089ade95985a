// SPDX-License-Identifier: Apache-2.0

package poll

import (
	"context"
	"errors"
	"os/exec"
	"strings"
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

func TestUntilContextEndsWhenTheProcessExits(t *testing.T) {
	cmd := exec.Command("sh", "-c", "exit 3")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	running, exited := WhileRunning(t.Context(), cmd)
	err := UntilContext(running, time.Minute, func() error { return errNotYet })
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || !strings.Contains(err.Error(), "sh exited") {
		t.Fatalf("err %v, want the exit of sh with status 3", err)
	}
	if err := <-exited; !errors.As(err, &exit) {
		t.Fatalf("exited received %v, want the exit error", err)
	}
}
