#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Measures what a VM pays on the node (tests/cluster RunBench, reported in
# docs/benchmarks.md, "On the kubelet"): on a fresh kind cluster set up as
# `make demo` sets it up, boot latency itemised for four cases, each
# sidecar's memory in its cgroup, and one worker with ten VMs booted at once.
# About 15 minutes on a 2-core machine once the images are built. The
# figures go to bin/node-bench.md as Markdown, the scripts' and kubectl's
# output to bin/node-bench.log; NODE_BENCH_ARGS are passed on (e.g.
# "-boots 20 -density 12", "-keep", "-reuse" on a cluster an earlier -keep
# left).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT/tests"
export TESTCONTAINERS_RYUK_DISABLED=true
log "building the node benchmark (cluster/cmd/node-bench)"
go build -o "${BIN}/node-bench" ./cluster/cmd/node-bench
# shellcheck disable=SC2086 # NODE_BENCH_ARGS is a list of flags
exec "${BIN}/node-bench" -report "${BIN}/node-bench.md" -log "${BIN}/node-bench.log" ${NODE_BENCH_ARGS:-}
