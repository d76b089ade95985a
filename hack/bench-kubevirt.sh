#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Measures the framework inside KubeVirt against KubeVirt's own alpha-1
# Plugins (tests/cluster RunKubeVirtBench, reported in
# docs/benchmarks-kubevirt.md): on a fresh kind cluster, KubeVirt v1.9.0 as
# released boots VMs with its alpha-1 CEL hook and without; the cluster is
# moved to the patched build, which boots VMs with the framework's launcher
# CEL hook making the same change, without any Plugin, and with the three
# Go sample sidecars, then boots ten VMs with the sidecars at once on one
# worker. About 55 minutes on a 2-core machine once KubeVirt's images are
# built. The figures go to bin/kubevirt-bench.md as Markdown,
# the scripts' and kubectl's output to bin/kubevirt-bench.log;
# KUBEVIRT_BENCH_ARGS are passed on (e.g. "-boots 20 -density 12", "-keep").
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT/tests"
export TESTCONTAINERS_RYUK_DISABLED=true
log "building the KubeVirt benchmark (cluster/cmd/kubevirt-bench)"
go build -o "${BIN}/kubevirt-bench" ./cluster/cmd/kubevirt-bench
# shellcheck disable=SC2086 # KUBEVIRT_BENCH_ARGS is a list of flags
exec "${BIN}/kubevirt-bench" -report "${BIN}/kubevirt-bench.md" -log "${BIN}/kubevirt-bench.log" ${KUBEVIRT_BENCH_ARGS:-}
