#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Installed as /usr/local/bin/ctr in the node base image, in front of
# Debian's /usr/bin/ctr. `kind build node-image` runs
# `ctr --namespace=k8s.io content fetch ... IMAGE` for every image it did not
# build itself (etcd, CoreDNS, pause, its CNI and storage images), and no
# registry is reachable. The images this project builds are archived in
# /kind/offline-images; the first fetch imports them all, and a fetch of an
# image that is then present succeeds. A fetch of any other image fails, as
# it would offline, except the two kind installs by default that the
# project's clusters do not use (kindnetd: the CNI is a bridge set up by
# hack/kind/cluster.sh; local-path-provisioner: no volume is provisioned):
# for those it says so and succeeds, and cluster.sh removes what would run
# them. Debian's containerd 1.6 ctr has no `info` command, which kind waits
# on; `version` answers the same question (is containerd up).
# KVP_CTR and KVP_OFFLINE_IMAGES stand in for /usr/bin/ctr and
# /kind/offline-images in tests/cluster's test of this script.
set -euo pipefail
real="${KVP_CTR:-/usr/bin/ctr}"
offline="${KVP_OFFLINE_IMAGES:-/kind/offline-images}"
if [ "${1:-}" = "info" ]; then exec "$real" version; fi
if [ "${1:-}" = "--namespace=k8s.io" ] && [ "${2:-}" = "content" ] && [ "${3:-}" = "fetch" ]; then
  img="${*: -1}"
  # kind fetches several images at once: the first to hold the lock
  # imports them all.
  exec 9>"${offline}/.lock"
  flock 9
  if [ ! -e "${offline}/.imported" ]; then
    for f in "${offline}"/*.tar; do
      "$real" --namespace=k8s.io images import --label=io.cri-containerd.pinned=pinned --no-unpack --digests "$f" >/dev/null
    done
    touch "${offline}/.imported"
  fi
  flock -u 9
  # The whole list is read before it is searched: grep -q leaves at the
  # first match, and ctr, still writing, would die of SIGPIPE and fail the
  # pipeline (pipefail) although the image is there.
  images=$("$real" --namespace=k8s.io images ls -q)
  if grep -qxF -- "$img" <<<"$images"; then exit 0; fi
  case "$img" in
    */kindnetd:*|*/local-path-provisioner:*|*/local-path-helper:*)
      echo "offline node image: $img is not used by this cluster, not fetched" >&2
      exit 0 ;;
  esac
  echo "offline node image: $img is not in ${offline} and no registry is reachable" >&2
  exit 1
fi
exec "$real" "$@"
