// SPDX-License-Identifier: Apache-2.0

// Package hookcounts is the report in which a virt-launcher tells its
// node's virt-handler what became of its launcher hooks: how many hook runs
// ended each way (hookresult's outcomes) per plugin and launcher hook point,
// and how many evaluations of a plugin's CEL the cost limit stopped, since
// the previous report, how long the runs took, and how often a plugin's
// GuestDefinition hook changed what another plugin's had. virt-launcher runs in the VM's Pod, which Prometheus
// does not scrape; virt-handler, one per node, is scraped, and adds the
// counts to its own series of the same names (handler-runtime's
// launchermetrics), so that one scrape per node sees the launcher hooks of
// every VM on it.
//
// launcher-runtime's kubevirthost writes the report
// (Launcher.TakeHookCounts) and handler-runtime's kubevirthost reads it
// (Handler.RecordLauncherHookCounts); the host, virt-launcher and
// virt-handler, carries the bytes between them without reading them.
//
// # Format
//
// A report is one JSON object:
//
//	{"version": 1,
//	 "outcomes": [{"plugin": "cpu-tuning", "hookPoint": "GuestDefinition", "outcome": "success", "count": 2}],
//	 "celCostLimitExceeded": [{"plugin": "label-walker", "hookPoint": "PreBoot", "count": 1}],
//	 "durations": [{"plugin": "cpu-tuning", "hookPoint": "GuestDefinition",
//	                "runs": [1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], "seconds": 0.0011}],
//	 "overlaps": [{"hookPoint": "GuestDefinition", "plugin": "b", "overwrittenPlugin": "a", "count": 1}]}
//
// version is Version; a change a reader of an earlier version would
// misread, a new field included, comes with a new version. Each entry of
// outcomes is the number of runs of the plugin's hooks at the hook point
// that ended with the outcome, the increase of
// kubevirt_plugins_launcher_hook_outcomes_total{plugin,hook_point,outcome}
// in the launcher; each entry of celCostLimitExceeded is the increase of
// kubevirt_plugins_launcher_hook_cel_cost_limit_exceeded_total{plugin,hook_point};
// each entry of durations is what
// kubevirt_plugins_launcher_hook_duration_seconds{plugin,hook_point}
// observed, the runs per bucket of DurationBuckets (not cumulative, the
// last element above the last bound) and their total seconds; each entry
// of overlaps is the increase of
// kubevirt_plugins_launcher_hook_overlaps_total{hook_point,plugin,overwritten_plugin}.
// Every list may be left out when empty; a launcher with nothing to report
// sends no report at all.
//
// The launcher is trusted less than virt-handler, so Decode refuses, naming
// the field, a report larger than MaxSize, one that is not exactly this
// object (unknown fields, trailing data), another version, more than
// MaxEntries entries, an entry with no plugin, a hook point that is not a
// launcher hook point, an outcome that is not one of hookresult.Outcomes, a
// count outside 1 to MaxCount, a durations entry whose runs are not one
// per bucket or add up to none or more than MaxCount, or whose seconds are
// negative or above MaxRunSeconds per run, an overlap of a plugin with
// itself, or the same series twice. Whether a plugin exists is the
// reader's to check.
package hookcounts
