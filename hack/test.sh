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
source "${ROOT}/kubevirt/version.sh"
cd "$ROOT"
export KUBEBUILDER_ASSETS="${KUBEBUILDER_ASSETS:-${BIN}/k8s}"
export TESTCONTAINERS_RYUK_DISABLED=true

out=$(mktemp /tmp/kvp-test.XXXXXX)
trap 'rm -f "$out"' EXIT
cluster_pid=
# On an interrupt the scenario in the background is stopped too (its own
# cleanup deletes its cluster).
trap '[ -z "$cluster_pid" ] || kill -INT "$cluster_pid" 2>/dev/null; exit 130' INT TERM
fail=0
times=()
# record NAME START RC: notes that NAME, started at START (SECONDS), ended
# with RC, for the table of times at the end; a failure fails the run.
record() {
  times+=("$(printf '%5ds  %s%s' $((SECONDS - $2)) "$1" "$([ "$3" = 0 ] || echo '  (FAILED)')")")
  [ "$3" = 0 ] || fail=1
}
# gowork M: the GOWORK module M's tests run with. The modules KubeVirt
# links run alone (off), at the versions their go.mod asks for, which are
# the ones KubeVirt links (hack/deps.sh); in the workspace they would get
# the controllers' newer ones. The others run in the workspace.
gowork() {
  if printf '%s\n' "${LINKED_MODULES[@]}" | grep -qxF "$1"; then echo off; fi
}
# phase NAME CMD...: runs CMD, its output to the terminal and to $out, and
# records how long it took.
phase() {
  local name=$1 start=$SECONDS rc=0
  shift
  log "$name"
  "$@" 2>&1 | tee -a "$out" || rc=1
  record "$name" "$start" "$rc"
}

# KubeVirt v1.9.0 built with the patch series (kubevirt/build.sh, cached
# by content): the cluster scenario deploys it and KubeVirt's unit tests
# run on its tree. Built in the background while the scenario's first step
# builds the project's images and creates the kind cluster (its second
# step takes the build's lock and finds it done).
build_out=$(mktemp /tmp/kvp-kubevirt-build.XXXXXX)
# The real-cluster scenario (tests/cluster, KVP_CLUSTER: a kind cluster
# from the node image make setup built, KubeVirt and its e2e on it) is
# mostly waiting on KubeVirt and its guests (the two cores are 70 to 85 %
# idle during its e2e): every other phase below runs beside it. Its output
# is printed when it ends.
cluster_out=$(mktemp /tmp/kvp-cluster.XXXXXX)
built=$(mktemp -u /tmp/kvp-cluster-built.XXXXXX)
trap 'rm -f "$out" "$build_out" "$cluster_out" "$built"' EXIT
build_start=$SECONDS
log "KubeVirt v1.9.0 built with kubevirt/patches (cached), then Multus's plugin (cached), in the background, into ${build_out}"
# Multus's plugin after it, for kubevirt/deploy.sh in the scenario's third
# step: built while the second makes KubeVirt's images.
{ kubevirt/build.sh && hack/kind/cluster.sh multus-bin; } >"$build_out" 2>&1 &
build_pid=$!
cluster_start=$SECONDS
# -v: its steps are written to the file as they happen (tail it to follow
# them), so that a run stopped halfway still shows where its time went.
log "go test: tests/cluster (the real-cluster scenario), in the background, into ${cluster_out}; its output comes when it ends"
(cd tests && KVP_CLUSTER=1 KVP_CLUSTER_BUILT="$built" exec go test -v -count=1 -timeout 75m "$@" ./cluster/) >"$cluster_out" 2>&1 &
cluster_pid=$!

rc=0
wait "$build_pid" || rc=1
tee -a "$out" <"$build_out"
record "KubeVirt v1.9.0 built with kubevirt/patches, then Multus's plugin (cached, beside the scenario's first steps)" "$build_start" "$rc"
# The phases beside the scenario wait until its builds (the project's
# images, the release's KubeVirt build, both builds' images: its first two
# steps) are over: on a bare machine those take both cores and lie on the
# critical path, while the phases below fit in the gaps the scenario
# leaves later, waiting on KubeVirt and its guests.
log "waiting for the cluster scenario's builds (its first two steps) before the phases beside it"
while [ ! -e "$built" ] && kill -0 "$cluster_pid" 2>/dev/null; do sleep 5; done
# What the phases below compile, compiled first at a low CPU priority: on
# a bare machine that is many minutes of both cores, which went before the
# scenario's own work (its third step took twice as long as on a warm
# machine). Only a warm-up: what fails here fails again below, and says why
# there. (KubeVirt's Plugins e2e, which the scenario runs on a cluster of
# its own from its third step, compiles at normal priority while that
# cluster is made.) phase runs it in a subshell (a pipeline's), so the
# renice stops there.
warm_up() {
  renice -n 10 -p "$BASHPID" >/dev/null
  kubevirt/unit-tests.sh --compile || log "KubeVirt's unit tests did not compile; their phase says why"
  for m in $(modules | grep -v '^tests$'); do
    (cd "$m" && GOWORK=$(gowork "$m") go test -count=1 -run '^$' ./... >/dev/null) || log "the tests of $m did not compile; their phase says why"
  done
}
phase "compiled at a low CPU priority (nice 10): KubeVirt's unit tests, the modules' tests (beside the cluster scenario)" warm_up

for m in $(modules | grep -v '^tests$'); do
  phase "go test: $m$([ -z "$(gowork "$m")" ] || echo ", alone at KubeVirt ${KUBEVIRT_VERSION}'s versions") (beside the cluster scenario)" \
    env GOWORK="$(gowork "$m")" bash -c 'cd "$0" && go test -count=1 -timeout 30m "$@" ./...' "$m" "$@"
done
# KubeVirt's own unit tests of every package the patches touch (beside the
# scenario, virtwrap's migration monitor specs raced their own leak check
# until patch 0005).
phase "go test: KubeVirt's unit tests of the packages kubevirt/patches touch (beside the cluster scenario)" kubevirt/unit-tests.sh
# The integration packages in tests/, one at a time: each starts its own
# API server and containers.
phase "go test: tests (integration, beside the cluster scenario)" \
  bash -c 'cd tests && go test -count=1 -p 1 -timeout 30m "$@" $(go list ./... | grep -v "/tests/cluster$")' - "$@"
# The oldest supported Kubernetes minor, served by the same kube-apiserver
# binary with --emulated-version: the packages whose behaviour depends on
# what the API server serves run again against it.
phase "go test: tests at Kubernetes ${OLDEST_K8S:=1.33} (emulated, beside the cluster scenario)" \
  bash -c 'cd tests && KVP_EMULATED_VERSION="$0" go test -count=1 -p 1 -timeout 30m "$@" ./controller/... ./crd/... ./labelsync/...' "$OLDEST_K8S" "$@"
log "go test: tests/cluster, waiting for it to end"
rc=0
wait "$cluster_pid" || rc=1
tee -a "$out" <"$cluster_out"
record "go test: tests/cluster (from its start, beside the phases above)" "$cluster_start" "$rc"

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
  # The scenario runs with -v: its errors come before its "--- FAIL"
  # line, with the step they belong to.
  if [ "$rc" != 0 ]; then
    log "the cluster scenario, the last lines of its output"
    tail -n 40 "$cluster_out" >&2
  fi
  die "some tests failed"
fi
