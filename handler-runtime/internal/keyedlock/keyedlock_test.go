package keyedlock

import (
	"context"
	"errors"
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
