// Package connpool keeps one gRPC client connection per Unix socket path
// and bounds the calls in flight on each, so that node hook calls reuse
// connections instead of dialing every time, and a slow server only
// queues the calls made to it.
//
// A connection that breaks (the server restarted, or was down when last
// tried) is dropped and dialed again on the next call; a call that fails as
// Unavailable on a connection that had served before is retried once on a
// fresh connection, because node hooks are idempotent by contract.
package connpool
