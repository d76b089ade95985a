// SPDX-License-Identifier: Apache-2.0

package pipeline

import (
	"fmt"

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

// PluginCondition is the HookError.HookIndex of an error in a plugin-level
// condition, which belongs to no single hook.
const PluginCondition = -1

// LegacyHooksIndex is the HookError.HookIndex of a failure of the legacy
// hook sidecars (Options.LegacyHooks): Kind is KindLegacy and Plugin is
// empty, as they belong to no Plugin.
const LegacyHooksIndex = -2

// HookError is the error of one launcher hook, or of a plugin's condition,
// at one hook point call, or of the legacy hook sidecars. Every hook
// failure the pipeline returns, and every ignored one it logs (the error
// handed to Options.Logger), is a *HookError; a host finds it with
// errors.As to set VMI conditions or events from its fields.
type HookError struct {
	// Plugin is the name of the Plugin; empty for LegacyHooksIndex.
	Plugin string
	// HookIndex is the index in spec.launcherHooks, PluginCondition or
	// LegacyHooksIndex.
	HookIndex int
	// Kind is the hook's kind; empty for PluginCondition.
	Kind HookKind
	// HookPoint is the hook point being run.
	HookPoint pluginv1alpha1.LauncherHookPoint
	// Socket is the declared socketPath of a sidecar hook; empty otherwise.
	Socket string
	// Err is the cause.
	Err error
}

func (e *HookError) Error() string {
	switch e.HookIndex {
	case LegacyHooksIndex:
		return fmt.Sprintf("legacy hook sidecars at %s: %v", e.HookPoint, e.Err)
	case PluginCondition:
		return fmt.Sprintf("plugin %q condition at %s: %v", e.Plugin, e.HookPoint, e.Err)
	}
	return fmt.Sprintf("plugin %q launcher hook #%d (%s) at %s: %v", e.Plugin, e.HookIndex, e.Kind, e.HookPoint, e.Err)
}

func (e *HookError) Unwrap() error { return e.Err }
