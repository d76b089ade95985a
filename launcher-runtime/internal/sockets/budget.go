// SPDX-License-Identifier: Apache-2.0

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

// DefaultPollInterval is the first pause of Wait between two tries; each
// further pause doubles, up to MaxPollInterval.
const DefaultPollInterval = 50 * time.Millisecond

// MaxPollInterval bounds the pause between two tries of Wait.
const MaxPollInterval = time.Second

// Budget is the time one hook point call may spend, in total, waiting for
// sidecar sockets to become ready. Time spent in the hooks themselves does
// not count. It is safe for concurrent use.
type Budget struct {
	clock    clock.Clock
	poll     time.Duration
	total    time.Duration
	mu       sync.Mutex
	consumed time.Duration
}

// NewBudget returns a budget of total whose waits first pause for poll
// (DefaultPollInterval when zero), on clk.
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

// retryable reports whether waiting may help: the socket is missing, or it
// exists and nothing accepts connections on it yet (a restarting sidecar
// leaves its socket file behind).
func retryable(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrNotListening)
}

// Wait calls ready until it succeeds, fails with an error waiting cannot
// cure, the budget is spent or ctx ends. Between two tries it pauses,
// doubling the pause from the budget's poll interval up to MaxPollInterval;
// only the pauses are taken from the budget. When the budget runs out the
// error says whether the socket never appeared or exists with nothing
// listening, and wraps ready's last error.
func (b *Budget) Wait(ctx context.Context, ready func(context.Context) error) error {
	pause := b.poll
	for {
		err := ready(ctx)
		if err == nil || !retryable(err) {
			return err
		}
		left := b.Remaining()
		if left <= 0 {
			if errors.Is(err, ErrNotListening) {
				return fmt.Errorf("socket exists but nothing listens on it after the %s socket wait budget of this hook point: %w", b.total, err)
			}
			return fmt.Errorf("socket did not appear within the %s socket wait budget of this hook point: %w", b.total, err)
		}
		start := b.clock.Now()
		select {
		case <-ctx.Done():
			b.consume(b.clock.Since(start))
			return fmt.Errorf("%w while waiting for the socket: %w", ctx.Err(), err)
		case <-b.clock.After(min(pause, left)):
		}
		b.consume(b.clock.Since(start))
		pause = min(2*pause, MaxPollInterval)
	}
}
