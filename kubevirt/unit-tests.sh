#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs KubeVirt's own unit tests of every package the patch series touches,
# on the patched tree kubevirt/build.sh made (building it first when it is
# not cached). The packages are read from the patches themselves, so a new
# patch brings its packages' tests along. Extra arguments go to go test.
#
#   kubevirt/unit-tests.sh [-run REGEXP]
#   kubevirt/unit-tests.sh --compile   only compile them (make test, at a
#                                      low CPU priority, before they run)
set -euo pipefail
source "$(dirname "$0")/../hack/lib.sh"
out=$("${ROOT}/kubevirt/build.sh")
cd "${out}/src"
source "${ROOT}/kubevirt/version.sh"
export "${KUBEVIRT_GO_ENV[@]}"

# Every directory a patch adds, changes or removes a file in that still
# holds a Go package with tests.
pkgs=()
for d in $(sed -n 's|^+++ b/\(.*\)/[^/]*$|\1|p; s|^--- a/\(.*\)/[^/]*$|\1|p' "${ROOT}"/kubevirt/patches/*.patch | sort -u); do
  compgen -G "${d}/*_test.go" >/dev/null || continue
  # tests/ are KubeVirt's functional tests: they need a cluster
  # (kubevirt/e2e.sh runs the Plugins ones there).
  case "$d" in tests | tests/*) continue ;; esac
  pkgs+=("./${d}")
done
[ ${#pkgs[@]} -gt 0 ] || die "the patches touch no package with tests"
# --compile: only compile the packages' tests (run with no test selected).
if [ "${1:-}" = --compile ]; then
  log "compiling KubeVirt's unit tests of the ${#pkgs[@]} packages the patches touch"
  exec go test -tags selinux -count=1 -run '^$' "${pkgs[@]}" >/dev/null
fi
log "KubeVirt's unit tests of the ${#pkgs[@]} packages the patches touch: ${pkgs[*]}"
# Some of KubeVirt's specs wait a few seconds of real time for what they
# check (patch 0005 mends the migration monitor's, which raced its own leak
# check): on two busy cores one of them can miss its window. A package that
# fails is run once more, on its own, and must pass then; the retry is
# printed.
results=$(mktemp)
trap 'rm -f "$results"' EXIT
if go test -tags selinux -count=1 -timeout 30m "$@" "${pkgs[@]}" | tee "$results"; then
  exit 0
fi
failed=$(sed -n 's|^FAIL[[:space:]]\{1,\}kubevirt.io/kubevirt/\([^[:space:]]*\).*|./\1|p' "$results")
[ -n "$failed" ] || die "KubeVirt's unit tests failed before any package reported"
for p in $failed; do
  log "retrying ${p} once, alone, after its failure above"
  go test -tags selinux -count=1 -timeout 30m "$@" "$p" || die "${p} failed again"
done
