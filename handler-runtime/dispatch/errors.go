// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"google.golang.org/grpc/status"

	"github.com/kubevirt-plugins/framework/api/hookresult"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

// ErrHookTimeout is wrapped by the error of a hook call cut off by the
// hook's timeout.
var ErrHookTimeout = errors.New("node hook timed out")

// PluginCondition is the HookError.HookIndex of an error of
// hookresult.ScopePlugin, kept while the name is deprecated.
//
// Deprecated: check HookError.Scope for hookresult.ScopePlugin.
const PluginCondition = -1

// HookError is the error of one node hook, or of a plugin's condition, in a
// dispatch. Its message has the shape of api/hookresult's Site, which
// launcher-runtime/pipeline's HookError shares.
type HookError struct {
	// Plugin is the name of the Plugin.
	Plugin string
	// Scope says what the error belongs to: one hook (the zero value) or
	// the plugin's condition (hookresult.ScopePlugin).
	Scope hookresult.Scope
	// HookIndex is the index in spec.nodeHooks for hookresult.ScopeHook;
	// for hookresult.ScopePlugin it holds the deprecated PluginCondition
	// until that is removed.
	HookIndex int
	// HookPoint is the event being dispatched.
	HookPoint pluginv1alpha1.NodeHookPoint
	// Socket is the hook's socket; empty for hookresult.ScopePlugin.
	Socket string
	// Err is the cause.
	Err error
}

func (e *HookError) Error() string {
	site := hookresult.Site{Side: hookresult.Node, Plugin: e.Plugin, Scope: e.scope(), Index: e.HookIndex, HookPoint: string(e.HookPoint)}
	if e.Socket != "" {
		site.Detail = "socket " + printableSocket(e.Socket)
	}
	return site.Message(e.Err)
}

// scope is e.Scope, or hookresult.ScopePlugin for a HookError built with
// only the deprecated PluginCondition.
func (e *HookError) scope() hookresult.Scope {
	if e.Scope == hookresult.ScopeHook && e.HookIndex == PluginCondition {
		return hookresult.ScopePlugin
	}
	return e.Scope
}

func (e *HookError) Unwrap() error { return e.Err }

// printableSocket is socket as an error names it: as it is, or quoted when
// it holds a control character or is not valid UTF-8 (admission refuses
// such paths, a Plugin stored before it did may still hold one).
func printableSocket(socket string) string {
	if utf8.ValidString(socket) && !strings.ContainsFunc(socket, unicode.IsControl) {
		return socket
	}
	return strconv.Quote(socket)
}

// maxServerMessage bounds, in bytes, the message of a node hook server's
// gRPC status as the dispatch error carries it: a longer one is cut at a
// character boundary and marked with its full length, so that the error,
// its log line and its Event stay small whatever the server sent.
const maxServerMessage = 4096

// boundServerMessage returns err with the message of its gRPC status cut
// to maxServerMessage bytes (cutText), its code and details kept; other
// errors, and statuses with a shorter valid message, as they are.
func boundServerMessage(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok || len(st.Message()) <= maxServerMessage && utf8.ValidString(st.Message()) {
		return err
	}
	p := st.Proto()
	p.Message = cutText(p.Message, maxServerMessage, fmt.Sprintf("... (%d bytes in all)", len(p.Message)))
	return status.ErrorProto(p)
}

// cutText returns s made valid UTF-8 (each invalid byte becomes U+FFFD)
// and, when that is longer than max bytes, cut at a character boundary
// and followed by marker, within max bytes in all. It reads no more of s
// than max bytes' worth of characters. max must leave room for marker.
func cutText(s string, max int, marker string) string {
	if len(s) <= max && utf8.ValidString(s) {
		return s
	}
	room := max - len(marker)
	var b strings.Builder
	b.Grow(min(len(s), max) + utf8.UTFMax)
	keep := 0 // length of b at the last character boundary within room
	for _, r := range s {
		if b.Len()+utf8.RuneLen(r) > max {
			return b.String()[:keep] + marker
		}
		b.WriteRune(r) // an invalid byte arrives as utf8.RuneError: U+FFFD
		if b.Len() <= room {
			keep = b.Len()
		}
	}
	return b.String()
}
