#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fails on stale generated code, untidy modules, modules that require
# different versions of one dependency or, linked into KubeVirt, more than
# its release does (hack/deps.sh), unformatted code, vet or
# golangci-lint findings, or a module that does not build on its own
# (GOWORK=off).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

fail=0
make -s generate >/dev/null
for m in $(modules); do
  (cd "$m" && GOWORK=off go mod tidy) || fail=1
done
if ! git diff --exit-code --stat; then
  echo "verify: generated files or go.mod/go.sum are stale: run make generate and go mod tidy, then commit" >&2
  fail=1
fi
untracked=$(git status --porcelain --untracked-files=all -- api deploy protos sample-sidecars/python-guestdefinition/hooks docs/metrics.md | grep '^??' || true)
if [ -n "$untracked" ]; then
  echo "verify: generation produced files that are not committed:" >&2
  echo "$untracked" >&2
  fail=1
fi
hack/deps.sh check || fail=1
unformatted=$(gofmt -l $(modules) 2>/dev/null || true)
if [ -n "$unformatted" ]; then
  echo "verify: not gofmt-ed:" >&2
  echo "$unformatted" >&2
  fail=1
fi
for m in $(modules); do
  log "vet and standalone build: $m"
  (cd "$m" && go vet ./... && GOWORK=off go build ./...) || fail=1
done
hack/lint.sh || fail=1
for m in api protos; do
  log "cgo-free build: $m"
  (cd "$m" && CGO_ENABLED=0 go build ./...) || fail=1
done
hack/license.sh || fail=1
[ "$fail" -eq 0 ] || die "verify failed"
log "verify passed"
