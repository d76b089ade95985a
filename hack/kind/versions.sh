# SPDX-License-Identifier: Apache-2.0
# Versions of the local kind clusters (hack/kind). Source it.
# kind, from its Go module.
KIND_VERSION=v0.33.0
# The Kubernetes version of the default node image: the newest minor the
# project supports. KVP_KIND_K8S_VERSION picks another: v1.34.4, the oldest
# minor KubeVirt 1.9 supports, is run once and recorded in docs/cluster.md
# (the Go module proxy serves k8s.io/kubernetes from v1.33 on).
KIND_K8S_VERSION="${KVP_KIND_K8S_VERSION:-v1.36.3}"
# The sandbox image kind's containerd configuration names.
KIND_PAUSE_TAG=3.10
# Multus, the meta CNI plugin KubeVirt's secondary networks need (its thin
# plugin, built from its Go module; cluster.sh multus).
MULTUS_VERSION=v4.2.2
