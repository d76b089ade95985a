#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs golangci-lint (pinned in hack/tools/lint, built here when missing) with
# the project's .golangci.yml on every workspace module. Extra arguments go
# to golangci-lint run (--fix, for one).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
"${ROOT}/hack/setup-tools.sh"

fail=0
for m in $(modules); do
  log "golangci-lint: $m"
  (cd "${ROOT}/$m" && "${BIN}/golangci-lint" run --config "${ROOT}/.golangci.yml" "$@" ./...) || fail=1
done
[ "$fail" -eq 0 ] || die "golangci-lint found problems (hack/lint.sh --fix mends some)"
