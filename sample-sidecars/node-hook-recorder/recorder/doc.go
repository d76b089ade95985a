// SPDX-License-Identifier: Apache-2.0

// Package recorder is a node hook handler that appends every lifecycle
// event it receives to a JSON lines file, one Event per line, numbered in
// the order the calls arrived. It can be made slow (Options.Delay) or made
// to fail at chosen hook points (Options.FailHookPoints), so that tests of
// the node hook dispatcher can use it as a well-behaved, slow or failing
// server.
package recorder
