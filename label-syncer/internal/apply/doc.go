// SPDX-License-Identifier: Apache-2.0

// Package apply writes a labelsync.Change to one target object: plan from
// the state at hand, send one JSON patch, and when the patch's test fails
// because the target changed meanwhile, read it again from the API server
// and plan again.
package apply
