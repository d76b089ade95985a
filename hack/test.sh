#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every module's tests: the libraries' unit tests first, then the
# integration tests in tests/, which use the real API server, Docker and
# libvirtd that `make setup` provides. Extra arguments go to `go test`.
# Each phase's time is printed at the end; when a test fails, the last
# lines of its output (where its errors are) are repeated there too, so
# that they are not lost in the middle of a long log.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
export KUBEBUILDER_ASSETS="${KUBEBUILDER_ASSETS:-${BIN}/k8s}"
export TESTCONTAINERS_RYUK_DISABLED=true

out=$(mktemp /tmp/kvp-test.XXXXXX)
trap 'rm -f "$out"' EXIT
fail=0
times=()
# phase NAME CMD...: runs CMD, its output to the terminal and to $out, and
# records how long it took.
phase() {
  local name=$1 start=$SECONDS rc=0
  shift
  log "$name"
  "$@" 2>&1 | tee -a "$out" || rc=1
  times+=("$(printf '%5ds  %s%s' $((SECONDS - start)) "$name" "$([ "$rc" = 0 ] || echo '  (FAILED)')")")
  [ "$rc" = 0 ] || fail=1
}

for m in $(modules | grep -v '^tests$'); do
  phase "go test: $m" bash -c 'cd "$0" && go test -count=1 -timeout 30m "$@" ./...' "$m" "$@"
done
# KubeVirt v1.9.0 built with the patch series (kubevirt/build.sh, cached)
# and its own unit tests of every package the patches touch.
phase "go test: KubeVirt's unit tests of the packages kubevirt/patches touch" kubevirt/unit-tests.sh
# One integration package at a time: each starts its own API server and
# containers, and two cores are shared by all of them. KVP_CLUSTER runs the
# real-cluster scenario (tests/cluster) too: a kind cluster from the node
# image make setup built.
phase "go test: tests (integration, the real-cluster scenario included)" \
  bash -c 'cd tests && KVP_CLUSTER=1 go test -count=1 -p 1 -timeout 75m "$@" ./...' - "$@"
# The oldest supported Kubernetes minor, served by the same kube-apiserver
# binary with --emulated-version: the packages whose behaviour depends on
# what the API server serves run again against it.
phase "go test: tests at Kubernetes ${OLDEST_K8S:=1.33} (emulated)" \
  bash -c 'cd tests && KVP_EMULATED_VERSION="$0" go test -count=1 -p 1 -timeout 30m "$@" ./controller/... ./crd/... ./labelsync/...' "$OLDEST_K8S" "$@"

log "time of each phase"
printf '%s\n' "${times[@]}" >&2
if [ "$fail" -ne 0 ]; then
  # Each failed test's block of output ends with its errors (t.Errorf comes
  # after the logs it follows): repeat the block's last lines.
  log "the failed tests, the end of each one's output"
  awk '
    function flush() { if (name != "") { print name; s = (n > 25 ? n - 25 : 0); for (i = s + 1; i <= n; i++) print buf[i]; print "" } name = ""; n = 0 }
    /^[[:space:]]*--- FAIL: / { flush(); name = $0; next }
    name != "" && /^[[:space:]]/ { buf[++n] = $0; next }
    name != "" { flush() }
    END { flush() }' "$out" >&2
  die "some tests failed"
fi
