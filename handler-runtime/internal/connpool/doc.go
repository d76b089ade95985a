// SPDX-License-Identifier: Apache-2.0

// Package connpool keeps one gRPC client connection per Unix socket path
// and bounds the calls in flight on each, so that node hook calls reuse
// connections instead of dialing every time, and a slow server only
// queues the calls made to it.
//
// A status the server returned, whatever its code, is the answer of that
// one call: it never closes or replaces the shared connection. Only a
// broken transport does: a connection in TransientFailure is replaced on
// the next call (instead of waiting out gRPC's reconnect backoff), and a
// call that failed as Unavailable without an answer from the server, on a
// connection that had served before, is tried once more, because node
// hooks are idempotent by contract. A connection that is replaced, forgotten
// or closed with the pool is closed only once the calls in flight on it have
// finished.
package connpool
