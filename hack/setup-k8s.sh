#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Puts kube-apiserver and etcd for envtest into bin/k8s (no download site
# is reachable). Skips what is already there.
#
# The kind node image (hack/kind/build-node-image.sh, which make setup runs
# first) builds kube-apiserver of the same release and an etcd of the
# version kubeadm names: when its kube-apiserver is the version
# hack/tools/k8s requires, both are taken from it instead of being
# compiled a second time (about 7 minutes on a bare machine). Otherwise
# they are built from hack/tools/k8s, a tools module that stays out of
# go.work: its k8s.io requirements must not be forced on the project's
# modules.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

out="${BIN}/k8s"
mkdir -p "$out"
tools="${ROOT}/hack/tools/k8s"
want=$(awk '$1 == "k8s.io/kubernetes" {print $2; exit}' "${tools}/go.mod")
node="${BIN}/kind/k8s-${want}/tree/kubernetes/server/bin"
if [ ! -x "${out}/kube-apiserver" ] && [ -x "${node}/kube-apiserver" ]; then
  log "kube-apiserver ${want} for envtest: the kind node image's"
  cp "${node}/kube-apiserver" "${out}/kube-apiserver"
fi
if [ ! -x "${out}/etcd" ]; then
  etcd=$(ls -1 "${BIN}"/kind/etcd-src-*/etcd 2>/dev/null | tail -1 || true)
  if [ -n "$etcd" ]; then
    log "etcd for envtest: the kind node image's ($(basename "$(dirname "$etcd")"))"
    cp "$etcd" "${out}/etcd"
  fi
fi
cd "$tools"
if [ ! -x "${out}/etcd" ]; then
  log "building etcd (about 2 minutes the first time)"
  GOWORK=off CGO_ENABLED=0 go build -o "${out}/etcd" go.etcd.io/etcd/server/v3
fi
if [ ! -x "${out}/kube-apiserver" ]; then
  log "building kube-apiserver (about 4 to 10 minutes the first time, seconds when cached)"
  GOWORK=off CGO_ENABLED=0 go build -o "${out}/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
fi
