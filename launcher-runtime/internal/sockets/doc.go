// SPDX-License-Identifier: Apache-2.0

// Package sockets finds the Unix sockets of plugin sidecars below the
// sockets root, checks them when they are dialed (inside the plugin's own
// directory, no symlink in any component below the root) and waits for them
// to appear within a budget shared by all the sidecars of one hook point call.
package sockets
