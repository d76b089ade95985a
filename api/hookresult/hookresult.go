// SPDX-License-Identifier: Apache-2.0

package hookresult

import (
	"fmt"
	"strconv"
	"strings"
)

// Outcome is what one hook did at one hook point call. Its values are those
// of the outcome label of the hook metrics.
type Outcome string

const (
	// Success: the hook ran and its result was used.
	Success Outcome = "success"
	// Skipped: the plugin's or the hook's condition was false; the hook
	// was not called.
	Skipped Outcome = "skipped"
	// Ignored: the hook failed under failureStrategy Ignore and the chain
	// went on without its result.
	Ignored Outcome = "ignored"
	// Error: the hook failed (under failureStrategy Fail, or a condition
	// could not be evaluated, or the call was cancelled) and the call
	// failed with it.
	Error Outcome = "error"
)

// Outcomes lists every Outcome, in the order a hook can end: the values
// of the outcome label of the launcher hook metrics.
var Outcomes = []Outcome{Success, Skipped, Ignored, Error}

// Failed reports whether the hook failed, ignored or not.
func (o Outcome) Failed() bool { return o == Ignored || o == Error }

// Scope says what a hook error belongs to.
type Scope uint8

const (
	// ScopeHook: one hook of a plugin, named by its index.
	ScopeHook Scope = iota
	// ScopePlugin: the plugin as a whole, no single hook (its condition).
	ScopePlugin
	// ScopeLegacyHooks: the legacy hook sidecars of the launcher, which
	// belong to no plugin.
	ScopeLegacyHooks
)

var scopeNames = [...]string{ScopeHook: "hook", ScopePlugin: "plugin", ScopeLegacyHooks: "legacyHooks"}

func (s Scope) String() string {
	if int(s) < len(scopeNames) {
		return scopeNames[s]
	}
	return "Scope(" + strconv.Itoa(int(s)) + ")"
}

// MarshalText encodes the scope as its name.
func (s Scope) MarshalText() ([]byte, error) {
	if int(s) >= len(scopeNames) {
		return nil, fmt.Errorf("hookresult: unknown scope %d", s)
	}
	return []byte(scopeNames[s]), nil
}

// UnmarshalText decodes a name MarshalText wrote.
func (s *Scope) UnmarshalText(text []byte) error {
	for i, n := range scopeNames {
		if n == string(text) {
			*s = Scope(i)
			return nil
		}
	}
	return fmt.Errorf("hookresult: unknown scope %q", text)
}

// Side is where a hook runs, the word before "hook" in a message.
type Side string

const (
	// Launcher hooks run in virt-launcher.
	Launcher Side = "launcher"
	// Node hooks run for virt-handler on the node.
	Node Side = "node"
)

// Site is where in a hook point call an error happened. Its String is the
// first part of every hook error message, before ": " and the cause.
type Site struct {
	Side   Side
	Plugin string
	Scope  Scope
	// Index is the hook's index in the plugin's list of hooks of its side;
	// only for ScopeHook.
	Index int
	// Detail is shown in parentheses after the index: the launcher hook's
	// kind, the node hook's socket. Only for ScopeHook; may be empty.
	Detail string
	// HookPoint is the hook point being called.
	HookPoint string
}

func (s Site) String() string {
	var b strings.Builder
	switch s.Scope {
	case ScopeLegacyHooks:
		b.WriteString("legacy hook sidecars")
	case ScopePlugin:
		fmt.Fprintf(&b, "plugin %q", s.Plugin)
	default:
		fmt.Fprintf(&b, "plugin %q %s hook #%d", s.Plugin, s.Side, s.Index)
		if s.Detail != "" {
			fmt.Fprintf(&b, " (%s)", s.Detail)
		}
	}
	b.WriteString(" at ")
	b.WriteString(s.HookPoint)
	return b.String()
}

// Message is the text of a hook error: the site, then the cause.
func (s Site) Message(cause error) string {
	return s.String() + ": " + fmt.Sprint(cause)
}

// Keys of the structured log lines about a hook, on both sides.
const (
	KeyPlugin    = "plugin"
	KeyHookIndex = "hookIndex"
	KeyHookPoint = "hookPoint"
	KeyOutcome   = "outcome"
	KeyDuration  = "duration"
)

// HookLogV is the verbosity of the line logged for every hook that ran or
// was skipped (see the package documentation, "Logging").
const HookLogV = 1

// IgnoredMessage is the message of the line logged, at Error, for a hook
// failure let through by failureStrategy Ignore.
const IgnoredMessage = "hook failed; failureStrategy is Ignore, going on without its result"
