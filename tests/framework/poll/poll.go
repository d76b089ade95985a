// SPDX-License-Identifier: Apache-2.0

// Package poll waits, in tests, for what another goroutine or process
// does and cannot announce: an object the API server holds, a file, an
// endpoint that answers. It calls a condition until it holds or a deadline
// passes, and a failure names the condition's last error. What a test can
// be told about (a channel, a process exit, a fake clock) it waits for
// directly instead.
package poll

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Interval is the pause between two calls of a condition.
const Interval = 50 * time.Millisecond

// Until calls cond until it returns nil. When timeout passes first, it
// fails t, naming what it waited for and cond's last error. It works in a
// cleanup too, where t.Context() has ended already.
func Until(t testing.TB, what string, timeout time.Duration, cond func() error) {
	t.Helper()
	if err := UntilContext(context.WithoutCancel(t.Context()), timeout, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// UntilContext calls cond until it returns nil, and returns nil then. When
// timeout passes first, or ctx ends, it returns an error wrapping cond's
// last error and, when ctx ended, its cause (context.Cause): cancelling
// ctx with a cause, such as the exit of the process waited for, ends the
// wait at once and says why.
func UntilContext(ctx context.Context, timeout time.Duration, cond func() error) error {
	return Every(ctx, Interval, timeout, cond)
}

// Every is UntilContext pausing interval between two calls: a benchmark
// polls less often than Interval, so that its polling costs the API server
// it measures little.
func Every(ctx context.Context, interval, timeout time.Duration, cond func() error) error {
	last := errors.New("not called")
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(context.Context) (bool, error) {
		last = cond()
		return last == nil, nil
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("%w (last: %w)", context.Cause(ctx), last)
	default:
		return fmt.Errorf("not within %s: %w", timeout, last)
	}
}

// WhileRunning waits for cmd, started, in the background. running ends
// when cmd exits, with the exit as its cause, so that a wait on it for
// what cmd does ends at once; exited then receives cmd.Wait's error.
func WhileRunning(ctx context.Context, cmd *exec.Cmd) (running context.Context, exited <-chan error) {
	running, stop := context.WithCancelCause(ctx)
	ch := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		if err == nil {
			stop(fmt.Errorf("%s exited", filepath.Base(cmd.Path)))
		} else {
			stop(fmt.Errorf("%s exited: %w", filepath.Base(cmd.Path), err))
		}
		ch <- err
	}()
	return running, ch
}
