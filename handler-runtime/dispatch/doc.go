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
// socket. Dispatches for different VMIs run concurrently; calls to one
// socket are bounded so that a slow server only holds up the VMIs that use
// it.
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
package dispatch
