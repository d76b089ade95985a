#!/usr/bin/env bash
# Runs the demo scenario (tests/demo) with its transcript on standard output.
# `make demo` runs `make setup` first, which installs and builds what is
# missing (Debian packages, Docker engine, kube-apiserver and etcd, the
# libvirtd image); the demo builds the sample images itself (hack/images.sh).
# Extra arguments go to the demo command; the default is -log bin/demo.log
# (the output of the controllers and containers, replaced on every run).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT/tests"
export KUBEBUILDER_ASSETS="${KUBEBUILDER_ASSETS:-${BIN}/k8s}"
export TESTCONTAINERS_RYUK_DISABLED=true

# The demo is built first and then exec'd (rather than `go run`) so that a
# Ctrl-C or SIGTERM reaches it directly and it can clean up everything it
# started before exiting.
log "building the demo (cgo, libvirt)"
go build -o "${BIN}/demo" ./demo/cmd/demo
[ $# -gt 0 ] || set -- -log "${BIN}/demo.log"
exec "${BIN}/demo" "$@"
