package keyedlock

import (
	"context"
	"sync"
)

// Locks is a set of mutexes addressed by key. The zero value is ready.
type Locks[K comparable] struct {
	mu    sync.Mutex
	locks map[K]*lock
}

type lock struct {
	held chan struct{} // has one element while the key is locked
	refs int           // holders plus waiters
}

// Lock waits until key is free or ctx ends, and returns the function that
// releases it.
func (l *Locks[K]) Lock(ctx context.Context, key K) (unlock func(), err error) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[K]*lock{}
	}
	k, ok := l.locks[key]
	if !ok {
		k = &lock{held: make(chan struct{}, 1)}
		l.locks[key] = k
	}
	k.refs++
	l.mu.Unlock()

	select {
	case k.held <- struct{}{}:
		return func() {
			<-k.held
			l.release(key, k)
		}, nil
	case <-ctx.Done():
		l.release(key, k)
		return nil, context.Cause(ctx)
	}
}

func (l *Locks[K]) release(key K, k *lock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k.refs--
	if k.refs == 0 {
		delete(l.locks, key)
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
	return k.refs - len(k.held)
}
