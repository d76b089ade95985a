// SPDX-License-Identifier: Apache-2.0

package celenv

import (
	"container/list"
	"errors"
	"sync"
)

var errCompilePanicked = errors.New("compiling the expression panicked")

// DefaultCacheSize is the cache size of New when Options.CacheSize is zero.
const DefaultCacheSize = 4096

type exprKind int

const (
	kindCondition exprKind = iota
	kindTransform
)

type cacheKey struct {
	kind exprKind
	expr string
}

// cacheEntry holds one compilation result, a program or a compile error (both
// depend only on the text, so a rejected expression is not compiled again
// either). done is closed once val and err are set.
type cacheEntry struct {
	key  cacheKey
	done chan struct{}
	val  any
	err  error
}

// programCache is a bounded least-recently-used map from expression text to
// compilation result. Concurrent requests for the same text share one
// compilation.
type programCache struct {
	mu    sync.Mutex
	size  int
	order *list.List // of *cacheEntry, most recently used first
	items map[cacheKey]*list.Element
}

func newProgramCache(size int) *programCache {
	return &programCache{size: size, order: list.New(), items: map[cacheKey]*list.Element{}}
}

// get returns the cached result for key, calling build on a miss.
func (c *programCache) get(key cacheKey, build func() (any, error)) (any, error) {
	c.mu.Lock()
	if el, ok := c.items[key]; ok {
		c.order.MoveToFront(el)
		entry := el.Value.(*cacheEntry)
		c.mu.Unlock()
		<-entry.done
		return entry.val, entry.err
	}
	entry := &cacheEntry{key: key, done: make(chan struct{})}
	c.items[key] = c.order.PushFront(entry)
	for c.order.Len() > c.size {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.items, oldest.Value.(*cacheEntry).key)
	}
	c.mu.Unlock()

	func() {
		// Waiters must not block forever should build panic.
		defer close(entry.done)
		entry.err = errCompilePanicked
		entry.val, entry.err = build()
	}()
	return entry.val, entry.err
}

// lookup returns the result cached for key, if there is one, waiting for
// a compilation of it in progress.
func (c *programCache) lookup(key cacheKey) (val any, err error, ok bool) {
	c.mu.Lock()
	el, ok := c.items[key]
	if ok {
		c.order.MoveToFront(el)
	}
	c.mu.Unlock()
	if !ok {
		return nil, nil, false
	}
	entry := el.Value.(*cacheEntry)
	<-entry.done
	return entry.val, entry.err, true
}

// len returns the number of entries held.
func (c *programCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
