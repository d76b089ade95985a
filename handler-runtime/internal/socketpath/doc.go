// Package socketpath decides whether a node hook socket may be dialed: the
// path must be clean, lie under one of the roots the host allows, and no
// component below that root may be a symbolic link. The check runs on every
// call, right before the connection is used, so a link planted after a
// Plugin was admitted is still refused.
package socketpath
