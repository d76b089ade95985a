// SPDX-License-Identifier: Apache-2.0

// Package keyedlock provides mutexes addressed by key that are handed to
// their waiters in the order they asked (first come, first served).
package keyedlock

import (
	"context"
	"sync"
)

// Locks is a set of mutexes addressed by key. The zero value is ready.
//
// The callers waiting for a key get it in the order their Lock calls
// queued, by construction: each waiter takes a place at the tail of the
// key's queue and Unlock hands the key to the head, never to whichever
// goroutine the scheduler wakes first. A waiter whose context ends leaves
// the queue without disturbing the order of the others.
type Locks[K comparable] struct {
	mu    sync.Mutex
	locks map[K]*lock
}

type lock struct {
	held    bool
	waiters []*waiter // in the order they asked; the head is next
}

type waiter struct {
	granted chan struct{} // closed when the key is handed to this waiter
}

// Lock waits until key is free and every caller that asked for it earlier
// has had it, or until ctx ends, and returns the function that releases it.
func (l *Locks[K]) Lock(ctx context.Context, key K) (unlock func(), err error) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[K]*lock{}
	}
	k, ok := l.locks[key]
	if !ok {
		k = &lock{}
		l.locks[key] = k
	}
	if !k.held {
		k.held = true
		l.mu.Unlock()
		return l.unlocker(key, k), nil
	}
	w := &waiter{granted: make(chan struct{})}
	k.waiters = append(k.waiters, w)
	l.mu.Unlock()

	select {
	case <-w.granted:
		return l.unlocker(key, k), nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	select {
	case <-w.granted:
		// Handed over while ctx ended: pass it on to the next in line.
		l.mu.Unlock()
		l.unlocker(key, k)()
	default:
		for i, o := range k.waiters {
			if o == w {
				k.waiters = append(k.waiters[:i], k.waiters[i+1:]...)
				break
			}
		}
		l.mu.Unlock()
	}
	return nil, context.Cause(ctx)
}

// unlocker returns the release of key held by the caller: the key goes to
// the first waiter, or is forgotten when nobody waits.
func (l *Locks[K]) unlocker(key K, k *lock) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if len(k.waiters) == 0 {
				k.held = false
				delete(l.locks, key)
				return
			}
			next := k.waiters[0]
			k.waiters[0] = nil
			k.waiters = k.waiters[1:]
			close(next.granted)
		})
	}
}

// Len is the number of keys currently locked or waited for.
func (l *Locks[K]) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.locks)
}

// Waiting is the number of callers waiting for key, not holding it.
func (l *Locks[K]) Waiting(key K) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	k, ok := l.locks[key]
	if !ok {
		return 0
	}
	return len(k.waiters)
}
