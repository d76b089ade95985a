//go:build tools

// Package k8stools pins the commands built by hack/setup-k8s.sh.
package k8stools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
