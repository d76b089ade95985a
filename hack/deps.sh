#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Keeps the versions the workspace's modules ask for consistent, in two
# groups:
#
# - The modules KubeVirt links (LINKED_MODULES in kubevirt/version.sh) ask
#   for the KubeVirt release's version of every dependency the release has
#   too (its replace directives count), or an older one, unless their own
#   dependencies need a newer one: a library linked into a host asks for
#   the oldest versions it works with, so that linking it leaves
#   virt-launcher's Kubernetes client, gRPC and libvirt bindings where the
#   release has them. Among themselves they agree on one version.
# - The other modules (the controllers, the samples, the tests) agree on
#   one version of everything they share, the highest any of them asks for.
#
# go.work selects one version for the workspace build, which hides what a
# module's own go.mod asks for; hack/test.sh therefore runs the linked
# modules' tests with GOWORK=off, at the versions KubeVirt links.
#
#   hack/deps.sh check   fail when a group disagrees, or when a linked
#                        module asks for more than the release where it
#                        need not (align would change its go.mod)
#   hack/deps.sh align   make it so, tidy, and repeat until nothing changes
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "${ROOT}/kubevirt/version.sh"
cd "$ROOT"

linked() { printf '%s\n' "${LINKED_MODULES[@]}"; }
others() { modules | grep -vxF -f <(linked); }

# requirements DIR... prints "path version module" for every require line
# of the modules in the directories given, indirect ones included.
requirements() {
  local m
  for m in "$@"; do
    (cd "$m" && go mod edit -json) |
      awk -v m="$m" '
        /"Require":/ {inreq=1}
        inreq && /"Path":/ {gsub(/[",]/, "", $2); p=$2}
        inreq && /"Version":/ {gsub(/[",]/, "", $2); print p, $2, m}
        inreq && /^\t\]/ {inreq=0}'
  done
}

# mismatches DIR... prints "path highest-version" for every path the
# modules given require at more than one version. sort -V orders semantic
# versions and Go pseudo-versions of one base as the go command does for
# the versions met here.
mismatches() {
  requirements "$@" | grep -v ' v0\.0\.0 ' | sort -k1,1 -k2,2V | awk '
    $1 != path { if (n > 1) print path, last; path = $1; n = 0; delete seen }
    !($2 in seen) { seen[$2] = 1; n++ }
    { last = $2 }
    END { if (n > 1) print path, last }'
}

# tidy DIR...
tidy() {
  local m
  for m in "$@"; do
    (cd "$m" && GOWORK=off go mod tidy)
  done
}

# raise_mismatches DIR...: each path the modules given require at more
# than one version, raised to the highest, until none is left.
raise_mismatches() {
  local round m bad path version args
  for round in 1 2 3 4 5 6; do
    bad=$(mismatches "$@")
    [ -z "$bad" ] && return 0
    log "deps: aligning $(wc -l <<<"$bad") paths in $* (round $round)"
    for m in "$@"; do
      args=()
      while read -r path version; do
        if grep -qF "\"Path\": \"$path\"" <<<"$(cd "$m" && go mod edit -json)"; then
          args+=("-require=$path@$version")
        fi
      done <<<"$bad"
      [ ${#args[@]} -eq 0 ] || (cd "$m" && go mod edit "${args[@]}")
    done
    tidy "$@"
  done
  die "deps: $* still disagree after 6 rounds: $(mismatches "$@" | tr '\n' ' ')"
}

# release_versions prints "path version" for every module the KubeVirt
# release's go.mod requires or replaces by a version of the same path: the
# version its build links (a replace wins over a require). A module it
# replaces by a directory (kubevirt.io/api and client-go, from its staging
# tree) is left out: its requirement says nothing.
release_versions() {
  local gomod
  gomod=$(cd / && GOWORK=off GOFLAGS=-mod=mod go mod download -json "kubevirt.io/kubevirt@${KUBEVIRT_VERSION}" |
    sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
  [ -f "$gomod" ] || die "deps: the module proxy gave no go.mod for kubevirt.io/kubevirt@${KUBEVIRT_VERSION}"
  awk '
    /^require \($/ {blk = "require"; next}
    /^replace \($/ {blk = "replace"; next}
    /^\)$/ {blk = ""; next}
    /^require / {sub(/^require /, ""); req($0); next}
    /^replace / {sub(/^replace /, ""); rep($0); next}
    blk == "require" {req($0)}
    blk == "replace" {rep($0)}
    function req(line,  f) { split(line, f, " "); if (f[2] != "") v[f[1]] = f[2] }
    function rep(line,  parts, o, n) {
      split(line, parts, "=>"); split(parts[1], o, " "); split(parts[2], n, " ")
      if (n[2] == "") skip[o[1]] = 1
      else if (n[1] == o[1]) r[o[1]] = n[2]
    }
    END {
      for (p in v) if (!(p in r) && !(p in skip)) print p, v[p]
      for (p in r) print p, r[p]
    }' "$gomod" | sort
}

# lower_linked DIR: in the linked modules under DIR, every requirement above
# the release's version goes down to it, then each is tidied (which raises
# back what their dependencies need) and the group agrees on the highest of
# what is left.
lower_linked() {
  local dir=$1 m path version rv args
  local -A release=()
  while read -r path version; do release[$path]=$version; done < <(release_versions)
  for m in $(linked); do
    args=()
    while read -r path version _; do
      rv=${release[$path]:-}
      [ -n "$rv" ] && [ "$rv" != "$version" ] || continue
      # Only down: a version older than the release's stays.
      [ "$(printf '%s\n%s\n' "$rv" "$version" | sort -V | tail -1)" = "$version" ] || continue
      args+=("-require=$path@$rv")
    done < <(cd "$dir" && requirements "$m")
    [ ${#args[@]} -eq 0 ] || (cd "${dir}/${m}" && go mod edit "${args[@]}")
  done
  (cd "$dir" && tidy $(linked) && raise_mismatches $(linked))
}

case "${1:-check}" in
check)
  fail=0
  bad=$(mismatches $(others))
  if [ -n "$bad" ]; then
    echo "deps: modules require different versions of the same dependency:" >&2
    while read -r path _; do
      requirements $(others) | awk -v p="$path" '$1 == p {printf "  %s %s in %s\n", $1, $2, $3}' >&2
    done <<<"$bad"
    fail=1
  fi
  # The linked modules, lowered on a copy: nothing may change.
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  for m in $(linked); do cp -r "$m" "${tmp}/${m}"; done
  lower_linked "$tmp" >/dev/null
  for m in $(linked); do
    if ! diff -u "${m}/go.mod" "${tmp}/${m}/go.mod" >&2; then
      echo "deps: ${m}/go.mod asks for versions above KubeVirt ${KUBEVIRT_VERSION}'s that it need not, or disagrees with the other modules KubeVirt links (the diff above)" >&2
      fail=1
    fi
  done
  [ "$fail" = 0 ] || { echo "deps: run hack/deps.sh align, then commit" >&2; exit 1; }
  ;;
align)
  lower_linked "$ROOT"
  tidy $(others)
  raise_mismatches $(others)
  log "deps aligned"
  ;;
*) die "usage: hack/deps.sh check|align" ;;
esac
