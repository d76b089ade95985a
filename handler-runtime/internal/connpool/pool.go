// SPDX-License-Identifier: Apache-2.0

package connpool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
)

// DefaultMaxInFlight is the default bound of concurrent calls per socket.
const DefaultMaxInFlight = 32

// Options configures a Pool.
type Options struct {
	// MaxInFlight bounds the calls in flight on one socket; further calls
	// wait (or give up when their context ends). Default DefaultMaxInFlight.
	MaxInFlight int
	// Dial creates a client connection to a socket path. It must apply the
	// options the pool passes (they tell the pool whether a failed call was
	// answered by the server). Default: Dial.
	Dial func(path string, opts ...grpc.DialOption) (*grpc.ClientConn, error)
}

// Dial creates a plaintext gRPC client for a Unix socket path. The
// connection is established lazily, on the first call.
func Dial(path string, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	opts = append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)
	return grpc.NewClient("unix://"+path, opts...)
}

// Pool holds connections keyed by socket path. It is safe for concurrent use.
type Pool struct {
	maxInFlight int
	dial        func(string, ...grpc.DialOption) (*grpc.ClientConn, error)

	mu      sync.Mutex
	closed  bool
	entries map[string]*entry

	// lookedUp, when set by a test, runs in Call right after the entry of
	// a path was looked up, where a concurrent Forget or Close may run.
	lookedUp func()
}

type entry struct {
	slots chan struct{}
	// users counts the calls holding this entry, from the moment they
	// look it up until they return, waiting for a slot included. Guarded
	// by Pool.mu; an entry is removed only while it has none.
	users int

	mu   sync.Mutex
	shut bool // removed from the pool, or the pool closed: dial no more
	conn *conn
}

// conn is one client connection and the calls running on it.
type conn struct {
	cc      *grpc.ClientConn
	calls   int  // guarded by entry.mu
	retired bool // closed when calls drops to zero
}

// New returns an empty pool.
func New(opts Options) *Pool {
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	if opts.Dial == nil {
		opts.Dial = Dial
	}
	return &Pool{maxInFlight: opts.MaxInFlight, dial: opts.Dial, entries: map[string]*entry{}}
}

// ErrClosed is returned by Call after Close.
var ErrClosed = errors.New("connection pool closed")

// Call runs fn with a connection to path once a slot for path is free.
// fn must make its calls with the context it is given.
func (p *Pool) Call(ctx context.Context, path string, fn func(context.Context, grpc.ClientConnInterface) error) error {
	e, err := p.acquire(path)
	if err != nil {
		return err
	}
	defer p.leave(e)
	if p.lookedUp != nil {
		p.lookedUp()
	}
	select {
	case e.slots <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("waiting for a free call slot on %s: %w", path, context.Cause(ctx))
	}
	defer func() { <-e.slots }()

	c, fresh, err := e.get(path, p.dial)
	if err != nil {
		return err
	}
	answered, err := e.run(ctx, c, fn)
	if status.Code(err) != codes.Unavailable || answered || fresh || ctx.Err() != nil {
		// A status from the server is this call's answer; a connection
		// dialed for this call has no earlier success to return to.
		return err
	}
	// The transport broke under the call: the server may have restarted
	// since this connection last worked. gRPC reconnects on the next call,
	// and get replaces a connection stuck in its reconnect backoff.
	if c, _, err = e.get(path, p.dial); err != nil {
		return err
	}
	_, err = e.run(ctx, c, fn)
	return err
}

// acquire returns the entry of path, counting the caller as its user.
func (p *Pool) acquire(path string) (*entry, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	e, ok := p.entries[path]
	if !ok {
		e = &entry{slots: make(chan struct{}, p.maxInFlight)}
		p.entries[path] = e
	}
	e.users++
	return e, nil
}

func (p *Pool) leave(e *entry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e.users--
}

// get returns the entry's connection, counting one more call on it, and
// dials when there is none or the one there is failing; fresh says whether
// it was dialed now.
func (e *entry) get(path string, dial func(string, ...grpc.DialOption) (*grpc.ClientConn, error)) (*conn, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.shut {
		return nil, false, ErrClosed
	}
	if e.conn != nil {
		switch e.conn.cc.GetState() {
		case connectivity.TransientFailure, connectivity.Shutdown:
			// Waiting out gRPC's reconnect backoff would fail calls to a
			// server that is already back; start over on a new
			// connection, and close this one once its calls are done.
			_ = e.conn.retire()
			e.conn = nil
		}
	}
	fresh := false
	if e.conn == nil {
		cc, err := dial(path, grpc.WithStatsHandler(answerTracker{}))
		if err != nil {
			return nil, false, fmt.Errorf("dialing %s: %w", path, err)
		}
		e.conn, fresh = &conn{cc: cc}, true
	}
	e.conn.calls++
	return e.conn, fresh, nil
}

// run calls fn on c and reports whether the server answered the call with a
// status of its own.
func (e *entry) run(ctx context.Context, c *conn, fn func(context.Context, grpc.ClientConnInterface) error) (answered bool, err error) {
	flag := &atomic.Bool{}
	err = fn(context.WithValue(ctx, answeredKey{}, flag), c.cc)
	e.mu.Lock()
	c.calls--
	if c.retired && c.calls == 0 {
		_ = c.cc.Close()
	}
	e.mu.Unlock()
	return flag.Load(), err
}

// retire closes c now if no call runs on it, or else when the last one
// returns. The caller holds the entry's lock.
func (c *conn) retire() error {
	c.retired = true
	if c.calls == 0 {
		return c.cc.Close()
	}
	return nil
}

// close stops the entry from dialing and retires its connection.
func (e *entry) close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.shut = true
	if e.conn == nil {
		return nil
	}
	err := e.conn.retire()
	e.conn = nil
	return err
}

// Forget closes and removes the connections of paths for which keep
// returns false, for example sockets no Plugin refers to any more. A path
// that calls are using or waiting for is kept: those calls, from dispatches
// that began before the Plugin went away, finish on their connection, and
// the next Forget removes it.
func (p *Pool) Forget(keep func(path string) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for path, e := range p.entries {
		if e.users > 0 || keep(path) {
			continue
		}
		_ = e.close()
		delete(p.entries, path)
	}
}

// Close closes every connection, each once the calls in flight on it have
// returned; later calls fail with ErrClosed.
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	var errs []error
	for path, e := range p.entries {
		if err := e.close(); err != nil {
			errs = append(errs, fmt.Errorf("closing %s: %w", path, err))
		}
	}
	p.entries = map[string]*entry{}
	return errors.Join(errs...)
}

// answeredKey marks a call's context with the flag answerTracker sets.
type answeredKey struct{}

// answerTracker records, for calls made through Pool.Call, that the
// server's trailers (which carry the status it returned) arrived: the call
// was answered by the server rather than cut off by the transport.
type answerTracker struct{}

func (answerTracker) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

func (answerTracker) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if _, ok := s.(*stats.InTrailer); !ok {
		return
	}
	if answered, ok := ctx.Value(answeredKey{}).(*atomic.Bool); ok {
		answered.Store(true)
	}
}

func (answerTracker) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

func (answerTracker) HandleConn(context.Context, stats.ConnStats) {}
