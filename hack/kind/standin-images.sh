#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the images of the virt-handler and virt-launcher stand-ins of the
# real-cluster test (tests/cluster/standin), without pulling anything:
#
#   kvp-standin-virt-handler:latest   the static handler on scratch
#   kvp-standin-virt-launcher:latest  the launcher (cgo, libvirt) on the
#                                     libvirtd image the tests use, run
#                                     under tini so QEMU's processes are reaped,
#                                     with the test guest it boots
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
cd "${ROOT}/tests"

ctx=$(mktemp -d "${TMPDIR:-/tmp}/kvp-standin.XXXXXX")
trap 'rm -rf "$ctx"' EXIT

build() { # name dockerfile-text
  local name=$1 text=$2 label=io.kubevirt-plugins.inputs inputs current
  printf '%s\n' "$text" >"${ctx}/${name}/Dockerfile"
  inputs=$(cat "${ctx}/${name}"/* | sha256sum | cut -c1-32)
  current=$(docker image inspect --format "{{ index .Config.Labels \"${label}\" }}" "kvp-standin-${name}:latest" 2>/dev/null || true)
  if [ "$current" != "$inputs" ]; then
    # The legacy builder needs nothing but the engine; its deprecation
    # notice is dropped, as hack/images.sh does.
    local out
    if ! out=$(DOCKER_BUILDKIT=0 docker build -q --label "${label}=${inputs}" -t "kvp-standin-${name}:latest" "${ctx}/${name}" 2>&1); then
      printf '%s\n' "$out" >&2
      die "docker build of kvp-standin-${name} failed"
    fi
  fi
  echo "kvp-standin-${name}:latest"
}

mkdir -p "${ctx}/virt-handler" "${ctx}/virt-launcher"
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "${ctx}/virt-handler/virt-handler" ./cluster/standin/virt-handler
# Runs as root: it reads the kubelet's Pod directory and dials node hook
# sockets in root's host directories, as virt-handler does.
build virt-handler 'FROM scratch
COPY virt-handler /virt-handler
USER 0:0
ENTRYPOINT ["/virt-handler"]'

libvirtd=$("${ROOT}/hack/build-libvirtd-image.sh")
go build -trimpath -ldflags='-s -w' -o "${ctx}/virt-launcher/virt-launcher" ./cluster/standin/virt-launcher
echo "$libvirtd" >"${ctx}/virt-launcher/base"
# The test guest the launcher boots (tests/framework/guest).
guest=$("${ROOT}/hack/build-guest.sh")
cp "${guest}/vmlinuz" "${guest}/initrd.img" "${ctx}/virt-launcher/"
# Runs as root, as libvirtd does in the tests' libvirtd containers.
build virt-launcher "FROM ${libvirtd}
COPY virt-launcher /usr/local/bin/virt-launcher
COPY vmlinuz initrd.img /usr/share/kvp-guest/
USER 0:0
ENTRYPOINT [\"/usr/bin/tini\", \"--\", \"/usr/local/bin/virt-launcher\"]"
