// SPDX-License-Identifier: Apache-2.0

package pipeline

import (
	"github.com/kubevirt-plugins/framework/api/hookresult"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

// HookKind says how a launcher hook runs: a CEL expression in the launcher,
// or a call to a sidecar.
type HookKind string

const (
	// KindCEL is a hook with a cel expression.
	KindCEL HookKind = "cel"
	// KindSidecar is a hook served by a sidecar over its socket.
	KindSidecar HookKind = "sidecar"
	// KindLegacy is the run of the legacy hook sidecars
	// (Options.LegacyHooks), which belong to no Plugin.
	KindLegacy HookKind = "legacy"
)

// PluginCondition is the HookError.HookIndex of an error of hookresult.ScopePlugin,
// kept while the name is deprecated.
//
// Deprecated: check HookError.Scope (HookRef.Scope) for
// hookresult.ScopePlugin.
const PluginCondition = -1

// LegacyHooksIndex is the HookError.HookIndex of an error of
// hookresult.ScopeLegacyHooks, kept while the name is deprecated.
//
// Deprecated: check HookError.Scope for
// hookresult.ScopeLegacyHooks.
const LegacyHooksIndex = -2

// HookError is the error of one launcher hook, or of a plugin's condition,
// at one hook point call, or of the legacy hook sidecars. Every hook
// failure the pipeline returns, and every ignored one it logs (the error
// handed to Options.Logger), is a *HookError; a host finds it with
// errors.As to set VMI conditions or events from its fields. Its message
// has the shape of api/hookresult's Site, which handler-runtime/dispatch's
// HookError shares.
type HookError struct {
	// Plugin is the name of the Plugin; empty for hookresult.ScopeLegacyHooks.
	Plugin string
	// Scope says what the error belongs to: one hook (the zero value),
	// the plugin's condition, or the legacy hook sidecars.
	Scope hookresult.Scope
	// HookIndex is the index in spec.launcherHooks for hookresult.ScopeHook. For the
	// other scopes it holds the deprecated PluginCondition or
	// LegacyHooksIndex until they are removed.
	HookIndex int
	// Kind is the hook's kind; empty for hookresult.ScopePlugin.
	Kind HookKind
	// HookPoint is the hook point being run.
	HookPoint pluginv1alpha1.LauncherHookPoint
	// Socket is the declared socketPath of a sidecar hook; empty otherwise.
	Socket string
	// Err is the cause.
	Err error
}

func (e *HookError) Error() string {
	site := hookresult.Site{Side: hookresult.Launcher, Plugin: e.Plugin, Scope: e.scope(), Index: e.HookIndex,
		Detail: string(e.Kind), HookPoint: string(e.HookPoint)}
	return site.Message(e.Err)
}

// scope is e.Scope, or the scope a HookError built with only the deprecated
// indices means.
func (e *HookError) scope() hookresult.Scope {
	if e.Scope == hookresult.ScopeHook {
		switch e.HookIndex {
		case PluginCondition:
			return hookresult.ScopePlugin
		case LegacyHooksIndex:
			return hookresult.ScopeLegacyHooks
		}
	}
	return e.Scope
}

func (e *HookError) Unwrap() error { return e.Err }
