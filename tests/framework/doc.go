// Package framework is the test harness the integration tests share: a
// real kube-apiserver and etcd (envtest) with the project's CRDs, and
// libvirtd containers started through testcontainers-go. Everything a
// helper starts is stopped by the cleanup it registers.
package framework
