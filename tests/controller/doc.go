// SPDX-License-Identifier: Apache-2.0

// Package controller holds the integration tests of the plugin controller on
// a real kube-apiserver: the validating webhook for Plugins installed from
// deploy/controller, the status reconciler, the launcher Pod policies of
// deploy/policies, and a load benchmark.
package controller
