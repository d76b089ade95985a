// SPDX-License-Identifier: Apache-2.0

// Package launchermetrics exposes, in virt-handler, the launcher hook
// counts of the VMs of its node. Launcher hooks run in virt-launcher, one
// Pod per VM, which Prometheus does not scrape; each launcher hands the
// counts of its outcomes, CEL cost-limit stops, hook durations and
// overlaps since its previous report (an api/hookcounts report,
// launcher-runtime/kubevirthost's Launcher.TakeHookCounts) to
// virt-handler, which passes the bytes to Counters.Record
// (handler-runtime/kubevirthost's Handler.RecordLauncherHookCounts).
// Counters adds them to four series on virt-handler's Registerer, of the
// names, types and labels launcher-runtime's pipeline registers in the
// launcher, so that the alerts and the dashboard of deploy/monitoring read
// them from one scrape per node:
//
//   - kubevirt_plugins_launcher_hook_outcomes_total{plugin, hook_point, outcome}:
//     launcher hook runs, outcome success, skipped, ignored or error;
//   - kubevirt_plugins_launcher_hook_cel_cost_limit_exceeded_total{plugin, hook_point}:
//     evaluations of a plugin's CEL (conditions, GuestDefinition
//     expressions) the CEL cost limit stopped;
//   - kubevirt_plugins_launcher_hook_duration_seconds{plugin, hook_point}:
//     a histogram of the time the runs took (not those skipped by their
//     condition), rebuilt from the runs per bucket of
//     hookcounts.DurationBuckets the launchers report;
//   - kubevirt_plugins_launcher_hook_overlaps_total{hook_point, plugin, overwritten_plugin}:
//     parts of a domain a GuestDefinition hook of plugin changed after one
//     of overwritten_plugin had.
//
// Their help text differs from the pipeline's: a process that ran launcher
// hooks and recorded them on the same Registerer would count them twice,
// and fails to register instead.
//
// # What is refused
//
// virt-handler trusts a launcher less than itself, so Record refuses a
// report whole, recording nothing of it, with an error naming the VMI and
// the field at fault, when api/hookcounts' Decode refuses it (size, version,
// shape, a hook point that is not a launcher hook point, an unknown
// outcome, a count outside 1 to hookcounts.MaxCount, a series twice) or
// when it names a plugin that is not among the Plugins of the store at
// that moment (an overlap's two plugins both). The label values are
// therefore bounded by what the store holds.
//
// # Series follow the Plugins
//
// The series of every Plugin of the store are there at 0 before any
// report counts them, for each launcher hook point the Plugin declares
// (its CEL hooks' hookPoint, its sidecars' permittedHooks): every outcome,
// the cost-limit stops and an empty duration histogram (overlaps, one
// series per pair of plugins, appear with their first count).
// Prometheus's increase() and rate() compare two
// samples of a series; a series that first appears with the count 1 has no
// earlier sample to compare with, and the first failure of a Plugin, which
// is what the alerts are for, would read as no increase. The series of a
// Plugin deleted from the store are dropped. Both happen when the series
// are gathered (each scrape) and when a report is recorded, each time the
// store's revision has changed since the last time.
package launchermetrics
