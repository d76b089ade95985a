// SPDX-License-Identifier: Apache-2.0

// Package plugin reconciles the status of Plugins: the observed generation,
// the hook counts and the conditions Accepted (every CEL expression is valid),
// AdmissionReferencesResolved (every referenced admission policy and webhook
// configuration exists) and Ready (both hold). It watches the four admission
// kinds a Plugin can reference and re-reconciles the Plugins that name an
// object when that object appears or disappears.
package plugin
