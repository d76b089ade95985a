#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Keeps the workspace's modules on one version of every dependency they
# share. go.work selects one version for the workspace build, which hides a
# module whose own go.mod asks for another: built alone (GOWORK=off), or
# released, it would link something else than what the tests ran.
#
#   hack/deps.sh check   list every module path two go.mod files require at
#                        different versions; exit 1 if there is one
#   hack/deps.sh align   raise each such path to the highest version any
#                        module requires, tidy, and repeat until none is left
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

# requirements prints "path version module" for every require line of every
# workspace module, indirect ones included.
requirements() {
  local m
  for m in $(modules); do
    (cd "$m" && go mod edit -json) |
      awk -v m="$m" '
        /"Require":/ {inreq=1}
        inreq && /"Path":/ {gsub(/[",]/, "", $2); p=$2}
        inreq && /"Version":/ {gsub(/[",]/, "", $2); print p, $2, m}
        inreq && /^\t\]/ {inreq=0}'
  done
}

# mismatches prints "path highest-version" for every path required at more
# than one version. sort -V orders semantic versions and Go pseudo-versions
# of one base as the go command does for the versions met here.
mismatches() {
  requirements | grep -v ' v0\.0\.0 ' | sort -k1,1 -k2,2V | awk '
    $1 != path { if (n > 1) print path, last; path = $1; n = 0; delete seen }
    !($2 in seen) { seen[$2] = 1; n++ }
    { last = $2 }
    END { if (n > 1) print path, last }'
}

case "${1:-check}" in
check)
  bad=$(mismatches)
  [ -z "$bad" ] && exit 0
  echo "deps: modules require different versions of the same dependency:" >&2
  while read -r path _; do
    requirements | awk -v p="$path" '$1 == p {printf "  %s %s in %s\n", $1, $2, $3}' >&2
  done <<<"$bad"
  echo "deps: run hack/deps.sh align, then commit" >&2
  exit 1
  ;;
align)
  for round in 1 2 3 4 5 6; do
    bad=$(mismatches)
    [ -z "$bad" ] && { log "deps aligned"; exit 0; }
    log "deps: aligning $(wc -l <<<"$bad") paths (round $round)"
    for m in $(modules); do
      args=()
      while read -r path version; do
        if grep -qF "\"Path\": \"$path\"" <<<"$(cd "$m" && go mod edit -json)"; then
          args+=("-require=$path@$version")
        fi
      done <<<"$bad"
      [ ${#args[@]} -gt 0 ] && (cd "$m" && go mod edit "${args[@]}")
    done
    for m in $(modules); do
      (cd "$m" && GOWORK=off go mod tidy)
    done
  done
  die "deps: still not aligned after 6 rounds: $(mismatches | tr '\n' ' ')"
  ;;
*) die "usage: hack/deps.sh check|align" ;;
esac
