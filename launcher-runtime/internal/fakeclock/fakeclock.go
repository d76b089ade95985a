// SPDX-License-Identifier: Apache-2.0

// Package fakeclock is the fake clock the launcher runtime's tests drive
// socket waits with: k8s.io/utils' FakeClock, which also says when
// something starts waiting on it. A test then steps it exactly when a wait
// has begun, instead of polling HasWaiters.
package fakeclock

import (
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// Clock is a FakeClock whose After announces each wait on Waits.
type Clock struct {
	*clocktesting.FakeClock
	waits chan time.Duration
}

// New returns a Clock at t.
func New(t time.Time) *Clock {
	return &Clock{FakeClock: clocktesting.NewFakeClock(t), waits: make(chan time.Duration)}
}

// After is FakeClock.After, and then blocks until the test receives d from
// Waits: stepping the clock by d from then on ends the wait. Only After
// announces; the socket wait uses nothing else.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	ch := c.FakeClock.After(d)
	c.waits <- d
	return ch
}

// Waits receives the duration of each wait that has begun.
func (c *Clock) Waits() <-chan time.Duration { return c.waits }
