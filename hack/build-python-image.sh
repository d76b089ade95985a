#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the image of a Python sample sidecar, sample-sidecars/NAME/sidecar.py
# with its generated stubs (hooks/), without pulling anything: a base image
# of Debian's python3-grpcio and python3-protobuf made with debootstrap and
# `docker import` (cached, tagged by a hash of this script), then the
# sample's files on top. Prints the image name.
#
#   hack/build-python-image.sh python-guestdefinition
set -euo pipefail
source "$(dirname "$0")/lib.sh"
name=${1:?usage: build-python-image.sh NAME}
src="${ROOT}/sample-sidecars/${name}"
[ -f "${src}/sidecar.py" ] || die "sample-sidecars/${name}/sidecar.py does not exist"
[ -d "${src}/hooks" ] || die "sample-sidecars/${name}/hooks is missing: run make generate"

base="kvp-python-base:$(sha256sum "$0" | cut -c1-12)"
if ! docker image inspect "$base" >/dev/null 2>&1; then
  apt_install debootstrap
  suite=$(. /etc/os-release && echo "${VERSION_CODENAME}")
  mirror=$(debian_mirror)
  rootfs=$(mktemp -d /tmp/kvp-python-base.XXXXXX)
  trap 'rm -rf "$rootfs" "${rootfs}.log"' EXIT
  log "debootstrap ${suite} with python3-grpcio for ${base} (about a minute)"
  debootstrap --variant=minbase --include=python3-grpcio,python3-protobuf \
    "$suite" "$rootfs" "$mirror" >"${rootfs}.log" 2>&1 || { tail -20 "${rootfs}.log" >&2; die "debootstrap failed"; }
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | docker import - "$base" >/dev/null
  rm -rf "$rootfs" "${rootfs}.log"
  trap - EXIT
fi

ctx=$(mktemp -d /tmp/kvp-python-image.XXXXXX)
trap 'rm -rf "$ctx"' EXIT
cp "${src}/sidecar.py" "$ctx/"
cp -r "${src}/hooks" "$ctx/"
find "$ctx" -name __pycache__ -prune -exec rm -rf {} +
# UID 107 is the launcher's user, so that the launcher can use the 0660 socket.
cat >"${ctx}/Dockerfile" <<DOCKERFILE
FROM ${base}
COPY sidecar.py /opt/${name}/sidecar.py
COPY hooks /opt/${name}/hooks
USER 107:107
ENV PYTHONDONTWRITEBYTECODE=1
ENTRYPOINT ["/usr/bin/python3", "/opt/${name}/sidecar.py"]
DOCKERFILE
inputs=$(cd "$ctx" && find . -type f | sort | xargs sha256sum | sha256sum | cut -c1-32)
image="kubevirt-plugins/${name}:dev"
current=$(docker image inspect --format '{{ index .Config.Labels "io.kubevirt-plugins.inputs" }}' "$image" 2>/dev/null || true)
if [ "$current" != "$inputs" ]; then
  out=$(DOCKER_BUILDKIT=0 docker build -q --label "io.kubevirt-plugins.inputs=${inputs}" -t "$image" "$ctx" 2>&1) \
    || { printf '%s\n' "$out" >&2; die "docker build of ${name} failed"; }
fi
docker tag "$image" "kvp-${name}:latest"
echo "$image"
