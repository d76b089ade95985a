#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every module's tests: the libraries' unit tests first, then the
# integration tests in tests/, which use the real API server, Docker and
# libvirtd that `make setup` provides. Extra arguments go to `go test`.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
export KUBEBUILDER_ASSETS="${KUBEBUILDER_ASSETS:-${BIN}/k8s}"
export TESTCONTAINERS_RYUK_DISABLED=true

fail=0
for m in $(modules | grep -v '^tests$'); do
  log "go test: $m"
  (cd "$m" && go test -count=1 -timeout 30m "$@" ./...) || fail=1
done
# KubeVirt v1.9.0 built with the patch series (kubevirt/build.sh, cached)
# and its own unit tests of every package the patches touch.
log "go test: KubeVirt's unit tests of the packages kubevirt/patches touch"
kubevirt/unit-tests.sh || fail=1
# One integration package at a time: each starts its own API server and
# containers, and two cores are shared by all of them. KVP_CLUSTER runs the
# real-cluster scenario (tests/cluster) too: a kind cluster from the node
# image make setup built.
log "go test: tests (integration, the real-cluster scenario included)"
(cd tests && KVP_CLUSTER=1 go test -count=1 -p 1 -timeout 60m "$@" ./...) || fail=1
# The oldest supported Kubernetes minor, served by the same kube-apiserver
# binary with --emulated-version: the packages whose behaviour depends on
# what the API server serves run again against it.
log "go test: tests at Kubernetes ${OLDEST_K8S:=1.33} (emulated)"
(cd tests && KVP_EMULATED_VERSION="$OLDEST_K8S" go test -count=1 -p 1 -timeout 30m "$@" \
  ./controller/... ./crd/... ./labelsync/...) || fail=1
[ "$fail" -eq 0 ] || die "some tests failed"
