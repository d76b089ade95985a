// SPDX-License-Identifier: Apache-2.0

// Package syncmetrics holds the label syncer's Prometheus metrics. They are
// registered on the Registerer the caller passes (the manager's registry in
// the binary, a fresh one in tests); nothing is registered globally.
//
// Every series carries a "target" label: VirtualMachineInstance or Pod.
//
//	kubevirt_plugins_label_syncer_patches_total          patches written
//	kubevirt_plugins_label_syncer_patch_conflicts_total  patches whose test failed because the target changed meanwhile (re-read and retried)
//	kubevirt_plugins_label_syncer_sync_duration_seconds  time to bring one target in line, retries included
//	kubevirt_plugins_label_syncer_syncs_total{result}    syncs by result: unchanged, patched, error
//	kubevirt_plugins_label_syncer_refused_keys_total{kind}  source keys (kind label or annotation) a target cannot take, per sync
//
// New makes every series at 0 before anything is counted: the patch and
// conflict counters and the duration histogram of each target, the sync
// counter of each target and result, and the refused-key counter of each
// target and kind. A counter series that appears only with its first
// increment has no earlier sample, so increase() and rate() over a window
// that holds its first sample see no increase: the first conflict or
// refused key of a syncer would go unseen by the alerts, and a healthy
// syncer would show no series at all on a dashboard rather than 0. Calling
// New again on the same Registerer finds these series already made and
// leaves their values as they are.
package syncmetrics
