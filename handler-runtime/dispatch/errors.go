// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"errors"
	"fmt"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

// ErrHookTimeout is wrapped by the error of a hook call cut off by the
// hook's timeout.
var ErrHookTimeout = errors.New("node hook timed out")

// PluginCondition is the HookError.HookIndex of an error in a plugin-level
// condition, which belongs to no single hook.
const PluginCondition = -1

// HookError is the error of one node hook, or of a plugin's condition, in a
// dispatch.
type HookError struct {
	// Plugin is the name of the Plugin.
	Plugin string
	// HookIndex is the index in spec.nodeHooks, or PluginCondition.
	HookIndex int
	// HookPoint is the event being dispatched.
	HookPoint pluginv1alpha1.NodeHookPoint
	// Socket is the hook's socket; empty for PluginCondition.
	Socket string
	// Err is the cause.
	Err error
}

func (e *HookError) Error() string {
	if e.HookIndex == PluginCondition {
		return fmt.Sprintf("plugin %q at node hook point %s: plugin condition: %v", e.Plugin, e.HookPoint, e.Err)
	}
	return fmt.Sprintf("plugin %q node hook %d (socket %s) at node hook point %s: %v", e.Plugin, e.HookIndex, e.Socket, e.HookPoint, e.Err)
}

func (e *HookError) Unwrap() error { return e.Err }
