// SPDX-License-Identifier: Apache-2.0

// Package framework is the test harness the integration tests share: a
// real kube-apiserver and etcd (envtest) with the project's CRDs, and
// libvirtd containers started through testcontainers-go. Everything a
// helper starts is stopped by the cleanup it registers. Tests wait with
// poll, for what they cannot be told about, and give the processes they
// start TCP ports with ports.
package framework
