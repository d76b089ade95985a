package sockets

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// DefaultPollInterval is how often Wait looks for a missing socket.
const DefaultPollInterval = 50 * time.Millisecond

// Budget is the time one hook point call may spend, in total, waiting for
// sidecar sockets to appear. Time spent in the hooks themselves does not
// count. It is safe for concurrent use.
type Budget struct {
	clock    clock.Clock
	poll     time.Duration
	total    time.Duration
	mu       sync.Mutex
	consumed time.Duration
}

// NewBudget returns a budget of total, polling every poll (DefaultPollInterval
// when zero) on clk.
func NewBudget(clk clock.Clock, total, poll time.Duration) *Budget {
	if poll <= 0 {
		poll = DefaultPollInterval
	}
	return &Budget{clock: clk, poll: poll, total: total}
}

// Remaining is what is left of the budget.
func (b *Budget) Remaining() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return max(b.total-b.consumed, 0)
}

func (b *Budget) consume(d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.consumed += d
}

// Wait calls check until it stops reporting fs.ErrNotExist, the budget is
// spent or ctx ends, and returns check's last result. A rejection is
// returned at once.
func (b *Budget) Wait(ctx context.Context, check func() (string, error)) (string, error) {
	for {
		path, err := check()
		if err == nil || !errors.Is(err, fs.ErrNotExist) {
			return path, err
		}
		left := b.Remaining()
		if left <= 0 {
			return "", fmt.Errorf("socket did not appear within the %s socket wait budget of this hook point: %w", b.total, err)
		}
		start := b.clock.Now()
		select {
		case <-ctx.Done():
			b.consume(b.clock.Since(start))
			return "", ctx.Err()
		case <-b.clock.After(min(b.poll, left)):
		}
		b.consume(b.clock.Since(start))
	}
}
