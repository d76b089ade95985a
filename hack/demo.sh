#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs a demo scenario with its transcript on standard output.
#
#   make demo              the real cluster (tests/cluster, docs/cluster.md):
#                          a kind cluster built here, every Pod run by a kubelet
#   make demo DEMO=quick   the quick path (tests/demo, docs/demo.md): one API
#                          server, libvirtd containers, the Pods played by hand
#
# `make demo` runs `make setup` first, which installs and builds what is
# missing (Debian packages, Docker engine, kube-apiserver and etcd, the
# libvirtd image, the kind node image); the demos build the component images
# themselves (hack/images.sh, cached by content). Extra arguments go to the
# demo command; the default is -log bin/demo.log (the output of the scripts,
# controllers and containers, replaced on every run).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT/tests"
export KUBEBUILDER_ASSETS="${KUBEBUILDER_ASSETS:-${BIN}/k8s}"
export TESTCONTAINERS_RYUK_DISABLED=true

case "${DEMO:-cluster}" in
  cluster) pkg=./cluster/cmd/cluster-demo ;;
  quick) pkg=./demo/cmd/demo ;;
  *) die "DEMO=${DEMO}: want cluster (the default) or quick" ;;
esac
# The demo is built first and then exec'd (rather than `go run`) so that a
# Ctrl-C or SIGTERM reaches it directly and it can clean up everything it
# started before exiting.
log "building the demo (${pkg#./})"
go build -o "${BIN}/demo" "$pkg"
[ $# -gt 0 ] || set -- -log "${BIN}/demo.log"
exec "${BIN}/demo" "$@"
