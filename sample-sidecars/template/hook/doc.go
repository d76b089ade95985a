// SPDX-License-Identifier: Apache-2.0

// Package hook is the handler of the template sidecar: copy the template,
// then replace the body of GuestDefinition with what your plugin does. See
// ../README.md.
package hook
