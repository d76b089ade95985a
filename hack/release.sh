#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Releases one module the Go way: tags <dir>/vX.Y.Z on a release commit whose
# go.mod requires the sibling modules at their newest released tags and has
# no `replace ../<dir>` lines. main keeps its replaces; the release commit
# hangs off main's HEAD and is reachable only through the tag.
#
#   hack/release.sh <dir> vX.Y.Z [--dry-run]
#
# Release bottom-up: api, protos, then launcher-runtime and handler-runtime,
# then plugin-controller and label-syncer, then sample-sidecars. A module
# whose siblings have no release yet is refused, naming the sibling.
# Push with: git push origin <dir>/vX.Y.Z
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

[ $# -ge 2 ] || die "usage: hack/release.sh <dir> vX.Y.Z [--dry-run]"
dir=$1 version=$2 dry=${3:-}
grep -qx -- "$dir" <<<"$(modules)" || die "$dir is not a module of go.work"
[ "$dir" != tests ] || die "tests is not released"
[[ "$version" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || die "$version is not a semantic version vX.Y.Z"
tag="${dir}/${version}"
! git rev-parse -q --verify "refs/tags/${tag}" >/dev/null || die "tag ${tag} exists"
[ -z "$(git status --porcelain -- "$dir")" ] || die "$dir has uncommitted changes"

prefix="github.com/kubevirt-plugins/framework"
gomod=$(git show "HEAD:${dir}/go.mod")
for sib in $(printf '%s\n' "$gomod" | grep -oE "^\s*${prefix}/[a-z-]+ v0\.0\.0" | awk '{print $1}' | sed "s#${prefix}/##"); do
  latest=$(git tag --list "${sib}/v*" --sort=-v:refname | head -n1)
  [ -n "$latest" ] || die "${dir} requires ${sib}, which has no release: release ${sib} first"
  gomod=$(printf '%s\n' "$gomod" | sed -E "s#(${prefix}/${sib}) v0\.0\.0#\1 ${latest#${sib}/}#")
done
# Drop the replace directives that point at sibling directories, single
# lines and lines inside a replace block alike, then the emptied blocks.
gomod=$(printf '%s\n' "$gomod" | grep -vE "^\s*(replace\s+)?${prefix}/[a-z-]+ => \.\./" | perl -0pe 's/\nreplace \(\s*\)\n/\n/g')

if [ "$dry" = "--dry-run" ]; then
  printf '%s\n' "$gomod"
  exit 0
fi
work=$(mktemp -d)
trap 'git worktree remove --force "$work" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add --detach -q "$work" HEAD
printf '%s\n' "$gomod" > "${work}/${dir}/go.mod"
git -C "$work" add "${dir}/go.mod"
who=(-c "user.name=${GIT_AUTHOR_NAME:-$(git config user.name || echo release)}"
  -c "user.email=${GIT_AUTHOR_EMAIL:-$(git config user.email || echo release@localhost)}")
git -C "$work" "${who[@]}" commit -q --allow-empty -m "${dir}: release ${version}"
git -C "$work" "${who[@]}" tag -a "$tag" -m "${dir} ${version}"
log "tagged ${tag}"
