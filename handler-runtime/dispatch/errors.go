// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"errors"

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
		site.Detail = "socket " + e.Socket
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
