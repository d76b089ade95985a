// SPDX-License-Identifier: Apache-2.0

// Package handler tests handler-runtime against real components: a real
// kube-apiserver with the Plugin CRD feeds the Plugin store, and node hooks
// are served by the sample node-hook-recorder running as a FROM scratch
// container, its socket directory bind-mounted from a temporary directory
// that the dispatcher allows as its socket root.
package handler
