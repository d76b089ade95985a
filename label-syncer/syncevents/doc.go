// SPDX-License-Identifier: Apache-2.0

// Package syncevents records the label syncer's events: only what a person
// must see, and few of them however many VMs show it.
//
// A routine sync records no event: it is counted by syncmetrics
// (kubevirt_plugins_label_syncer_syncs_total{result="patched"}) and logged at
// verbosity 1. An event, of type Warning, on the VMI concerned, says that
//
//   - a key of the source that an entry selects cannot be written on the
//     target (ReasonKeyRefused): the VM template holds a label value or key,
//     or an annotation key, that the API server rejects; the other keys are
//     synced and the refused one is counted
//     (kubevirt_plugins_label_syncer_refused_keys_total);
//   - the API server refused a patch for another reason than a concurrent
//     change (ReasonPatchFailed); the sync is retried with back-off.
//
// The events are aggregated: one problem (a refused key of one kind on one
// kind of target, or a patch failure of one API status reason on one kind of
// target) records at most one event per Options.Interval, on the first
// object met, and the next one says on how many objects it was seen since.
// At most Options.MaxProblems distinct problems get their own event per
// interval; those beyond share one. So the recorder writes at most
// MaxProblems+1 events per interval whatever the number of VMs (65 per ten
// minutes by default), and one misconfigured key on 5,000 VMs writes one.
package syncevents
