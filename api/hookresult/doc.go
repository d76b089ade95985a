// SPDX-License-Identifier: Apache-2.0

// Package hookresult is the vocabulary the launcher (launcher-runtime's
// pipeline) and the node (handler-runtime's dispatch) share to say what
// became of a hook in a chain, what a hook error is about, and how both log
// it.
//
// An Outcome is what one hook did at one hook point call: Success (it ran
// and its result was used), Skipped (its plugin's or its own condition was
// false), Ignored (it failed under failureStrategy Ignore and the chain went
// on without it) or Error (it failed and the call failed with it). A Scope
// says what an error belongs to: one hook of a plugin (ScopeHook, with the
// hook's index), the plugin as a whole (ScopePlugin: its condition), or the
// legacy hook sidecars, which belong to no plugin (ScopeLegacyHooks).
//
// Both HookError types format their message through Site, so a failure
// reads the same on the launcher and on the node:
//
//	plugin "x" launcher hook #1 (sidecar) at PreBoot: calling the sidecar: ...
//	plugin "x" node hook #0 (socket /var/run/kubevirt/x/node.sock) at PreVMStart: ...
//	plugin "x" at PreBoot: plugin condition: no such key: ...
//	legacy hook sidecars at GuestDefinition: ...
//
// # Logging
//
// Both log a hook the same way, with the keys below (KeyPlugin, KeyHookIndex,
// KeyHookPoint, KeyOutcome, KeyDuration):
//
//   - a failure let through by failureStrategy Ignore is logged with
//     logr's Error, the hook error as the error, whatever the verbosity: it
//     is a failure the operator should see even when nothing fails;
//   - every hook that ran or was skipped is logged at V(HookLogV), 1: each
//     line says what a hook did for one VMI at one hook point, the same
//     level as the other per-object lines of the project (the label syncer's
//     changes, the sidecar SDK's calls); the internals of a call (a
//     connection dialed again, informer events) are logged higher.
//
// A failure that fails the call is returned, not logged: the caller decides.
package hookresult
