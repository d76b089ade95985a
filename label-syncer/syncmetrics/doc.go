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
package syncmetrics
