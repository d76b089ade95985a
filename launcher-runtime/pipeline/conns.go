// SPDX-License-Identifier: Apache-2.0

package pipeline

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"
)

// errClosed is returned by hooks of a Pipeline that was closed.
var errClosed = errors.New("the pipeline is closed")

// conns holds one gRPC connection per sidecar socket for the life of the
// Pipeline. A connection is created through the checked dial and replaced
// when it is found broken; a replaced connection is closed once the last
// call using it is done, never under a call in flight.
type conns struct {
	mu     sync.Mutex
	m      map[string]*pooled
	closed bool
}

type pooled struct {
	cc      *grpc.ClientConn
	users   int
	retired bool
}

// current returns the connection kept for key, or nil.
func (cs *conns) current(key string) (*pooled, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		return nil, errClosed
	}
	return cs.m[key], nil
}

// acquire marks p in use if it is still the connection kept for key.
func (cs *conns) acquire(key string, p *pooled) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed || cs.m[key] != p {
		return false
	}
	p.users++
	return true
}

// renew returns, in use, the connection for key once seen (possibly nil)
// was found not connected: the one kept, if another call replaced seen
// meanwhile, or else a new one from dial, which replaces seen.
func (cs *conns) renew(key string, seen *pooled, dial func() (*grpc.ClientConn, error)) (*pooled, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		return nil, errClosed
	}
	if cur := cs.m[key]; cur != nil && cur != seen {
		cur.users++
		return cur, nil
	}
	cc, err := dial()
	if err != nil {
		return nil, err
	}
	if cs.m == nil {
		cs.m = map[string]*pooled{}
	}
	p := &pooled{cc: cc, users: 1}
	cs.m[key] = p
	if seen != nil {
		seen.retired = true
		if seen.users == 0 {
			_ = seen.cc.Close()
		}
	}
	return p, nil
}

// release ends one use of p, closing it if it was replaced meanwhile and
// this was its last use.
func (cs *conns) release(p *pooled) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	p.users--
	if p.retired && p.users == 0 {
		_ = p.cc.Close()
	}
}

// close closes every connection; later calls fail with errClosed.
func (cs *conns) close() error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.closed = true
	var errs []error
	for _, p := range cs.m {
		p.retired = true
		errs = append(errs, p.cc.Close())
	}
	cs.m = nil
	return errors.Join(errs...)
}

type answeredKey struct{}

// withAnswerWatch returns ctx with a flag answerWatch sets once the sidecar
// sends headers or trailers for the call made with it: a status the
// sidecar returned, rather than one the client made up for a broken
// transport.
func withAnswerWatch(ctx context.Context) (context.Context, *atomic.Bool) {
	answered := &atomic.Bool{}
	return context.WithValue(ctx, answeredKey{}, answered), answered
}

// answerWatch is the stats.Handler of sidecar connections that feeds
// withAnswerWatch.
type answerWatch struct{}

func (answerWatch) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

func (answerWatch) HandleRPC(ctx context.Context, s stats.RPCStats) {
	switch s.(type) {
	case *stats.InHeader, *stats.InTrailer:
		if answered, ok := ctx.Value(answeredKey{}).(*atomic.Bool); ok {
			answered.Store(true)
		}
	}
}

func (answerWatch) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

func (answerWatch) HandleConn(context.Context, stats.ConnStats) {}
