// SPDX-License-Identifier: Apache-2.0

// Package dispatch calls node hooks: at each VM lifecycle event virt-handler
// reports (PreVMStart, PostVMStart, OnVMStop, PostVMStop, PreMigrationSource,
// PreMigrationTarget, PostMigrationTarget), it selects the node hooks that
// permit the event and whose plugin and hook conditions hold for the VMI,
// and calls them one after the other over gRPC: plugins in alphabetical
// order, hooks in declaration order.
//
// Each call is bounded by the hook's timeout, and a failure is handled by
// the hook's own failureStrategy only. Sockets are checked against the
// allowed roots right before every call and connections are pooled per
// socket; a status a server returns fails only the call it answers.
// Dispatches for different VMIs run concurrently; calls to one socket are
// bounded so that a slow server only holds up the VMIs that use it.
//
// # Errors and logs
//
// A failed hook, or a plugin condition that cannot be evaluated, is a
// *HookError: the plugin, the scope (a hook, or the plugin's condition,
// api/hookresult's Scope), the hook's index in spec.nodeHooks, the hook
// point and the socket, wrapping the cause. Its message has the shape the
// launcher's pipeline shares (api/hookresult's Site):
//
//	plugin "x" node hook #0 (socket /var/run/kubevirt/x/node.sock) at PreVMStart: rpc error: ...
//	plugin "x" at PreVMStart: plugin condition: ...
//
// Logs follow api/hookresult's convention, as the launcher's pipeline does:
// a failure let through by failureStrategy Ignore is logged with Error, the
// *HookError as the error; every hook called that succeeded is logged at
// V(1) ("node hook done"); both with the keys plugin, hookIndex, hookPoint,
// vmi, outcome and duration. Durations come from Options.Clock.
//
// # Ordering within one VMI
//
// Node hooks of one VMI are ordered per VMI, not per (VMI, hook point):
// a dispatch of a VMI waits until the dispatch of the same VMI already
// running has returned, whatever either's hook point. Dispatches of one VMI
// that wait run in the order they were called (a queue per VMI, first come
// first served); one whose context ends leaves the queue and the others keep
// their places. If the host calls
// OnVMStop while PreVMStart is still running, OnVMStop waits until
// PreVMStart's hooks have returned (each bounded by its timeout), then calls
// the OnVMStop hooks; if OnVMStop's own context ends first it fails with
// an error saying that it waited for the VMI's dispatch in progress, and
// no OnVMStop hook is called. A host that wants the stop handled at once
// cancels the context of the PreVMStart dispatch.
//
// Why per VMI: a plugin sees one VMI's lifecycle in the order the host
// reported it and never two events of one VMI at the same time. Ordered
// only per hook point, OnVMStop could reach a plugin while its PreVMStart
// for the same VMI was still setting something up, and the teardown could
// run before the setup it undoes, leaving the setup behind on the node.
// The price, a stop that waits out a slow start, is bounded by the hooks'
// timeouts and is the same order virt-handler itself keeps, handling one
// VMI in one worker at a time.
//
// The Plugins are read after the wait, so a dispatch that waited calls the
// hooks of the Plugins that exist when it runs, not of those that existed
// when it was called.
//
// # Events
//
// With Options.EventRecorder set, a node hook that fails, ignored or not,
// also writes a Warning Event on the VMI, where the VM's owner looks (kubectl
// describe vmi): reason NodeHookFailed when the dispatch fails with it,
// NodeHookFailureIgnored when failureStrategy Ignore let it through, the
// message naming the plugin, the hook, its socket, the hook point and the
// error. A plugin condition that cannot be evaluated writes one too.
//
// Events are deduplicated per VMI and plugin: after an Event, further
// failures of that plugin's node hooks for that VMI are only counted until
// Options.EventInterval (10 minutes by default) has passed; the next Event
// says how many there were. So a plugin failing at every lifecycle event of
// 250 VMIs writes at most 250 Events per interval, whatever how often it
// fails (a node runs far fewer VMIs than that), and client-go's recorder
// aggregates and rate-limits per object on top. What is remembered is a
// time and a count per (VMI, plugin) pair; pairs whose interval has passed
// are dropped whenever more than 1024 are remembered.
//
// # Plugins a VMI requires
//
// A VMI annotated plugin.kubevirt.io/required (api's
// plugin/v1alpha1/required) does not start while a Plugin it names is
// missing, not Ready for its generation, or not selecting it: PreVMStart
// fails before any hook is called, with a *required.Error naming each one
// and why, and, with an EventRecorder, a RequiredPluginUnavailable Event per
// Plugin (deduplicated as above). With the feature gate off every required
// Plugin is missing. The other hook points are not held up: a VMI that runs
// is stopped as usual.
//
// Metrics, registered on Options.Registerer:
//
//   - kubevirt_plugins_node_hook_call_duration_seconds{plugin, hook_point, outcome}:
//     histogram of each hook call; outcome is success, error or timeout.
//   - kubevirt_plugins_node_hook_ignored_failures_total{plugin, hook_point}:
//     failed calls let through by failureStrategy Ignore.
//   - kubevirt_plugins_node_hook_dispatch_duration_seconds{hook_point, outcome}:
//     histogram of whole dispatches; outcome is success or error.
//   - kubevirt_plugins_node_hook_dispatches_in_flight{hook_point}: dispatches
//     running now.
//   - kubevirt_plugins_node_hook_vmi_wait_seconds{hook_point}: histogram of
//     how long dispatches waited for the dispatch of the same VMI in
//     progress (see Ordering within one VMI), including waits cut short by
//     the caller's context.
//   - kubevirt_plugins_node_hook_cel_cost_limit_exceeded_total{plugin, hook_point}:
//     condition evaluations the CEL cost limit stopped (the dispatch fails
//     with a *HookError whose error wraps celenv.ErrCostLimitExceeded and
//     quotes the condition).
package dispatch
