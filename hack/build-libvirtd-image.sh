#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libvirtd test image without pulling anything: debootstrap of the
# Debian release this machine runs, the config from hack/images/libvirtd, then
# `docker import`. The tag is a hash of the inputs, so a cached image is reused
# until one of them changes.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

ctx="${ROOT}/hack/images/libvirtd"
tag=$(cat "$0" "$ctx"/* | sha256sum | cut -c1-12)
image="kvp-libvirtd:${tag}"
if docker image inspect "$image" >/dev/null 2>&1; then
  echo "$image"
  exit 0
fi
apt_install debootstrap
suite=$(. /etc/os-release && echo "${VERSION_CODENAME}")
mirror=$(debian_mirror)
rootfs=$(mktemp -d /tmp/kvp-libvirtd.XXXXXX)
trap 'rm -rf "$rootfs"' EXIT
log "debootstrap ${suite} for ${image} (about a minute)"
debootstrap --variant=minbase \
  --include=libvirt-daemon,libvirt-daemon-driver-qemu,qemu-system-x86,libvirt-clients,tini,procps \
  "$suite" "$rootfs" "$mirror" >"${rootfs}.log" 2>&1 || { tail -20 "${rootfs}.log" >&2; die "debootstrap failed"; }
rm -f "${rootfs}.log"
chroot "$rootfs" sh -c 'groupadd -r kvm 2>/dev/null || true; groupadd -r libvirt-qemu 2>/dev/null || true; useradd -r -g libvirt-qemu libvirt-qemu 2>/dev/null || true'
install -m 0644 "$ctx/qemu.conf" "$rootfs/etc/libvirt/qemu.conf"
install -m 0644 "$ctx/libvirtd.conf" "$rootfs/etc/libvirt/libvirtd.conf"
install -m 0755 "$ctx/entrypoint.sh" "$rootfs/usr/local/bin/libvirtd-entrypoint"
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
log "importing ${image}"
tar -C "$rootfs" -c . | docker import \
  -c 'CMD ["/usr/local/bin/libvirtd-entrypoint"]' \
  -c 'EXPOSE 16509' - "$image" >/dev/null
docker tag "$image" kvp-libvirtd:latest
echo "$image"
