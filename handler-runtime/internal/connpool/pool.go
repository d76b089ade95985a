package connpool

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// DefaultMaxInFlight is the default bound of concurrent calls per socket.
const DefaultMaxInFlight = 32

// Options configures a Pool.
type Options struct {
	// MaxInFlight bounds the calls in flight on one socket; further calls
	// wait (or give up when their context ends). Default DefaultMaxInFlight.
	MaxInFlight int
	// Dial creates a client connection to a socket path. Default: Dial.
	Dial func(path string) (*grpc.ClientConn, error)
}

// Dial creates a plaintext gRPC client for a Unix socket path. The
// connection is established lazily, on the first call.
func Dial(path string) (*grpc.ClientConn, error) {
	return grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

// Pool holds connections keyed by socket path. It is safe for concurrent use.
type Pool struct {
	maxInFlight int
	dial        func(string) (*grpc.ClientConn, error)

	mu      sync.Mutex
	closed  bool
	entries map[string]*entry
}

type entry struct {
	slots chan struct{}

	mu   sync.Mutex
	conn *grpc.ClientConn
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
func (p *Pool) Call(ctx context.Context, path string, fn func(context.Context, grpc.ClientConnInterface) error) error {
	e, err := p.entry(path)
	if err != nil {
		return err
	}
	select {
	case e.slots <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("waiting for a free call slot on %s: %w", path, context.Cause(ctx))
	}
	defer func() { <-e.slots }()

	conn, fresh, err := e.get(path, p.dial)
	if err != nil {
		return err
	}
	err = fn(ctx, conn)
	if status.Code(err) != codes.Unavailable {
		return err
	}
	e.drop(conn)
	if fresh || ctx.Err() != nil {
		return err
	}
	// The server may have restarted since this connection last worked.
	if conn, _, err = e.get(path, p.dial); err != nil {
		return err
	}
	if err = fn(ctx, conn); status.Code(err) == codes.Unavailable {
		e.drop(conn)
	}
	return err
}

func (p *Pool) entry(path string) (*entry, error) {
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
	return e, nil
}

// get returns the entry's connection, dialing when there is none or the
// one there is failing; fresh says whether it was dialed now.
func (e *entry) get(path string, dial func(string) (*grpc.ClientConn, error)) (*grpc.ClientConn, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.conn != nil {
		switch e.conn.GetState() {
		case connectivity.TransientFailure, connectivity.Shutdown:
			// Waiting out gRPC's reconnect backoff would fail calls to a
			// server that is already back; start over instead.
			_ = e.conn.Close()
			e.conn = nil
		default:
			return e.conn, false, nil
		}
	}
	conn, err := dial(path)
	if err != nil {
		return nil, false, fmt.Errorf("dialing %s: %w", path, err)
	}
	e.conn = conn
	return conn, true, nil
}

// drop closes conn if it is still the entry's connection.
func (e *entry) drop(conn *grpc.ClientConn) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.conn == conn {
		_ = e.conn.Close()
		e.conn = nil
	}
}

// Forget closes and removes the connections of paths for which keep
// returns false, for example sockets no Plugin refers to any more, unless
// calls are in flight on them.
func (p *Pool) Forget(keep func(path string) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for path, e := range p.entries {
		if keep(path) || len(e.slots) > 0 {
			// Calls in flight, from dispatches that began before the
			// Plugin went away, finish on their connection.
			continue
		}
		e.mu.Lock()
		if e.conn != nil {
			_ = e.conn.Close()
			e.conn = nil
		}
		e.mu.Unlock()
		delete(p.entries, path)
	}
}

// Close closes every connection; later calls fail with ErrClosed.
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	var errs []error
	for path, e := range p.entries {
		e.mu.Lock()
		if e.conn != nil {
			if err := e.conn.Close(); err != nil {
				errs = append(errs, fmt.Errorf("closing %s: %w", path, err))
			}
			e.conn = nil
		}
		e.mu.Unlock()
	}
	p.entries = map[string]*entry{}
	return errors.Join(errs...)
}
