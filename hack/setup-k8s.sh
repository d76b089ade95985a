#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds kube-apiserver and etcd for envtest from their Go modules into
# bin/k8s (no download site is reachable). Skips what is already there.
# The tools module hack/tools/k8s stays out of go.work: its k8s.io
# requirements must not be forced on the project's modules.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

out="${BIN}/k8s"
mkdir -p "$out"
cd "${ROOT}/hack/tools/k8s"
if [ ! -x "${out}/etcd" ]; then
  log "building etcd (about 2 minutes the first time)"
  GOWORK=off CGO_ENABLED=0 go build -o "${out}/etcd" go.etcd.io/etcd/server/v3
fi
if [ ! -x "${out}/kube-apiserver" ]; then
  log "building kube-apiserver (about 4 to 10 minutes the first time, seconds when cached)"
  GOWORK=off CGO_ENABLED=0 go build -o "${out}/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
fi
