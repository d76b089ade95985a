// SPDX-License-Identifier: Apache-2.0

package keyedlock

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestSameKeyIsExclusiveOtherKeysAreNot(t *testing.T) {
	var l Locks[string]
	unlockA, err := l.Lock(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	unlockB, err := l.Lock(t.Context(), "b")
	if err != nil {
		t.Fatalf("locking another key while a is held: %v", err)
	}
	unlockB()

	ctx, cancel := context.WithCancel(t.Context())
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
		u, err := l.Lock(t.Context(), "a")
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
	unlock, err := l.Lock(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if n := l.Waiting("a"); n != 0 {
		t.Fatalf("Waiting with one holder and no waiter = %d, want 0", n)
	}
	got := make(chan func(), 1)
	go func() {
		u, err := l.Lock(t.Context(), "a")
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

// TestWaitersGetTheKeyInTheOrderTheyAsked queues waiters one after the
// other behind a holder (each is queued before the next one asks) and
// releases the key: they get it in the order they asked, also when one in
// the middle gives up first.
func TestWaitersGetTheKeyInTheOrderTheyAsked(t *testing.T) {
	var l Locks[string]
	unlock, err := l.Lock(t.Context(), "vmi")
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	const quitter = 3
	quit, cancelQuitter := context.WithCancel(t.Context())
	defer cancelQuitter()
	var order []int // appended while holding the key
	done := make(chan error, n)
	for i := range n {
		ctx := t.Context()
		if i == quitter {
			ctx = quit
		}
		go func() {
			u, err := l.Lock(ctx, "vmi")
			if err != nil {
				done <- err
				return
			}
			order = append(order, i)
			u()
			done <- nil
		}()
		for l.Waiting("vmi") != i+1 {
			runtime.Gosched()
		}
	}
	cancelQuitter()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the waiter whose context ended got %v, want context.Canceled", err)
	}
	for l.Waiting("vmi") != n-1 {
		runtime.Gosched()
	}
	unlock()
	for range n - 1 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	want := []int{0, 1, 2, 4, 5, 6, 7}
	if !slices.Equal(order, want) {
		t.Fatalf("waiters got the key in the order %v, want %v", order, want)
	}
	if n := l.Len(); n != 0 {
		t.Fatalf("%d keys still tracked after every lock was released", n)
	}
}

// TestCancellationsRacingHandOversNeitherLoseNorShareTheKey: waiters whose
// contexts end while the key is being handed to them pass it on; at no
// time do two callers hold it, and nothing is left tracked at the end.
func TestCancellationsRacingHandOversNeitherLoseNorShareTheKey(t *testing.T) {
	var l Locks[int]
	var holders atomic.Int32
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), time.Duration(i%7)*50*time.Microsecond)
			defer cancel()
			u, err := l.Lock(ctx, 0)
			if err != nil {
				return
			}
			if holders.Add(1) != 1 {
				t.Error("two callers hold the key at once")
			}
			time.Sleep(20 * time.Microsecond)
			holders.Add(-1)
			u()
		})
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	if _, err := l.Lock(ctx, 0); err != nil {
		t.Fatalf("the key was lost: %v", err)
	}
	if n := l.Waiting(0); n != 0 {
		t.Fatalf("%d waiters left", n)
	}
}
