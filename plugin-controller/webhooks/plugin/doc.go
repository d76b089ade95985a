// SPDX-License-Identifier: Apache-2.0

// Package plugin serves the validating admission webhook for Plugins. It
// rejects what the CRD schema cannot check: CEL expressions that do not
// compile, have the wrong result type (a condition that is not a bool, a
// GuestDefinition expression that does not return a Domain), exceed the cost
// limit, or name fields Domain{...} does not have. Every problem is listed
// with its field path and the CEL error.
//
// Deleting a Plugin is always allowed; the response warns (kubectl prints
// "Warning: ...") when VMIs or VirtualMachine templates require it with the
// annotation plugin.kubevirt.io/required, naming up to ten of them: those
// VMs will not start again until a Ready Plugin of that name selects them.
// The deployment's ValidatingWebhookConfiguration sends deletions to a
// second webhook entry with failurePolicy Ignore, so that a controller that
// is down never blocks a deletion.
package plugin
