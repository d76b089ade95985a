// SPDX-License-Identifier: Apache-2.0

// Package socketpath checks a Unix socket path of the plugin contract
// before it is dialed, and dials it. The launcher runtime (sidecar sockets
// under /var/run/kubevirt-plugin), the handler runtime (node hook sockets
// under the host paths virt-handler mounts), admission and the SDK all use
// it; it is the one place these rules are written.
//
// CheckShape is the lexical rule every socket path follows: at most 108
// bytes (sun_path), no control character (NUL included), no "..", no "."
// component, no repeated or trailing "/".
//
// On the file system, every component below a trusted root must exist, none
// may be a symlink, the directories must be directories and the last
// component a socket. The root itself is resolved once, since on many
// images /var/run is a link to /run: links in the root are trusted, links
// below it never. Root.Walk returns a checked path; Root.Dial checks and
// connects in one step; Roots does both for absolute paths below one of
// several roots (virt-handler's node hook sockets).
//
// # The checked dial
//
// The directories holding plugin sockets are writable from plugin
// containers, so a component may be replaced by a symlink between a check
// and connect(2), and a path-based connect would follow it. On Linux,
// Root.Dial therefore opens the root and then each component with
// O_PATH|O_NOFOLLOW relative to the descriptor of the one before, checks the
// type of what it holds open (fstat), and connects to the socket through
// /proc/self/fd/<n> of the last descriptor: what it connects to is what it
// checked, and a component swapped in after the check is never followed.
// Every connect goes this way, gRPC's reconnects included. Other systems
// fall back to Walk followed by a path connect. Documentation elsewhere
// refers here as "the checked dial (api/socketpath)".
package socketpath
