#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every Go benchmark of the project; docs/benchmarks.md reports the
# figures. BENCH selects benchmarks (default: all), e.g. BENCH=Dispatch.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
export KUBEBUILDER_ASSETS="${KUBEBUILDER_ASSETS:-${BIN}/k8s}"
export TESTCONTAINERS_RYUK_DISABLED=true
for m in $(modules); do
  log "go test -bench: $m"
  (cd "$m" && go test -run '^$' -bench "${BENCH:-.}" -benchmem -timeout 60m ./...)
done
