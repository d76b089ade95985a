// SPDX-License-Identifier: Apache-2.0

// Package tuner is a PreMigrationSource handler that tunes a live migration
// per VMI from its labels: parallel (multifd) connections, compression
// methods and post-copy. It returns only the changes; labels it does not
// find leave KubeVirt's configuration as it is.
package tuner
