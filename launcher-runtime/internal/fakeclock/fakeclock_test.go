// SPDX-License-Identifier: Apache-2.0

package fakeclock

import (
	"testing"
	"time"
)

func TestAWaitIsAnnouncedOnceItEndsWithAStep(t *testing.T) {
	c := New(time.Now())
	fired := make(chan time.Time)
	go func() { fired <- <-c.After(time.Second) }()
	d := <-c.Waits()
	if d != time.Second {
		t.Fatalf("announced %s, want 1s", d)
	}
	if !c.HasWaiters() {
		t.Fatal("the wait was announced before the clock had it")
	}
	c.Step(d)
	<-fired
}
