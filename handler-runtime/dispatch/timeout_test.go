// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// lateTimer is a call context whose deadline has passed but whose timer
// has not fired yet, as on a loaded node when the server's reset arrives
// first.
type lateTimer struct {
	context.Context
	deadline time.Time
}

func (c lateTimer) Deadline() (time.Time, bool) { return c.deadline, true }

func TestDeadlineExceededFromTheServerAtTheDeadlineIsAHookTimeout(t *testing.T) {
	expired, cancel := context.WithTimeout(t.Context(), -time.Second)
	defer cancel()
	past := lateTimer{Context: t.Context(), deadline: time.Now().Add(-time.Millisecond)}
	future := lateTimer{Context: t.Context(), deadline: time.Now().Add(time.Hour)}
	deadlineStatus := status.Error(codes.DeadlineExceeded, "stream terminated by RST_STREAM with error code: CANCEL")

	for _, tc := range []struct {
		name   string
		ctx    context.Context
		err    error
		expect bool
	}{
		{"the call context ended by its deadline", expired, errors.New("any error"), true},
		{"the server's reset before the client's timer fired", past, deadlineStatus, true},
		{"the server's own DeadlineExceeded well before the deadline", future, deadlineStatus, false},
		{"another error after the deadline", past, status.Error(codes.Unavailable, "connection reset"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := timedOut(tc.ctx, tc.err); got != tc.expect {
				t.Fatalf("timedOut = %v, want %v", got, tc.expect)
			}
		})
	}
}
