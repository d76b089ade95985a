// SPDX-License-Identifier: Apache-2.0

// Package labelsync computes what the label syncer writes to a target object
// (a VirtualMachineInstance or a launcher Pod) from its source (the VM
// template or the VMI), and the JSON patch that writes it.
//
// The rules, for labels and annotations alike, each with its own
// keyfilter.Filter:
//
//   - a matching key present in the source is added to the target, or
//     overwritten when its value differs;
//   - a matching key present only in the target is removed;
//   - every other key of the target is left as it is;
//   - a matching key of the source that the target cannot take (a label
//     key or value, or an annotation key, the API server would reject) is
//     refused: left on the target as it is and listed in Change.Refused,
//     while the other keys are synced;
//   - so is an annotation that would take the target's annotations over
//     the MaxAnnotationsBytes (256 KiB, keys and values added up) the API
//     server accepts, which a template is not held to: the largest
//     annotations the change writes are refused until the rest fits;
//   - with pruning on, the target records in the annotations
//     SyncedLabelsAnnotation and SyncedAnnotationsAnnotation which keys were
//     synced; a recorded key that no entry matches any more (the
//     configuration changed) is removed, a key never recorded is not.
//
// The patch tests the target's UID and the previous maps it replaces, so it
// applies only to the state it was computed from; the caller re-reads and
// plans again when the test fails.
//
// The package is pure: no I/O.
package labelsync
