package keyedlock

import (
	"context"
	"errors"
	"runtime"
	"testing"
)

func TestSameKeyIsExclusiveOtherKeysAreNot(t *testing.T) {
	var l Locks[string]
	unlockA, err := l.Lock(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	unlockB, err := l.Lock(context.Background(), "b")
	if err != nil {
		t.Fatalf("locking another key while a is held: %v", err)
	}
	unlockB()

	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan error, 1)
	go func() {
		_, err := l.Lock(ctx, "a")
		waited <- err
	}()
	cancel()
	if err := <-waited; !errors.Is(err, context.Canceled) {
		t.Fatalf("second Lock of a held key = %v, want it to wait until canceled", err)
	}

	got := make(chan func(), 1)
	go func() {
		u, err := l.Lock(context.Background(), "a")
		if err != nil {
			t.Error(err)
		}
		got <- u
	}()
	unlockA()
	(<-got)()
	if n := l.Len(); n != 0 {
		t.Fatalf("%d keys still tracked after every lock was released", n)
	}
}

func TestWaitingCountsOnlyCallersThatWaitForTheKey(t *testing.T) {
	var l Locks[string]
	if n := l.Waiting("a"); n != 0 {
		t.Fatalf("Waiting on an unknown key = %d", n)
	}
	unlock, err := l.Lock(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if n := l.Waiting("a"); n != 0 {
		t.Fatalf("Waiting with one holder and no waiter = %d, want 0", n)
	}
	got := make(chan func(), 1)
	go func() {
		u, err := l.Lock(context.Background(), "a")
		if err != nil {
			t.Error(err)
		}
		got <- u
	}()
	for l.Waiting("a") != 1 {
		runtime.Gosched()
	}
	unlock()
	(<-got)()
	if n := l.Waiting("a"); n != 0 {
		t.Fatalf("Waiting after every lock was released = %d", n)
	}
}
