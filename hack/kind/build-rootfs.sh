#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the root filesystem of the kind node image (build-node-image.sh)
# and prints its image name: Debian's packages for what a kind node runs
# (systemd, containerd, runc, iptables, the CNI plugins), kind's node files
# from its Go module, and this directory's wrappers. Tagged by the hash of
# its inputs, so a cached image is reused until one of them changes.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
HERE="${ROOT}/hack/kind"
source "${HERE}/versions.sh"
export GOWORK=off

kind_module_dir() {
  go mod download -json "sigs.k8s.io/kind@${KIND_VERSION}" | awk -F'"' '/"Dir":/ {print $4}'
}

# rootfs_image: Debian with what a kind node runs, kind's node files, the
# wrappers of this directory. Tagged by the hash of its inputs.
main() {
  local tag img rootfs kindfiles suite mirror
  tag=$(cat "${HERE}/build-rootfs.sh" "${HERE}/ctr-wrapper.sh" "${HERE}/node-entrypoint.sh" <(echo "$KIND_VERSION") | sha256sum | cut -c1-12)
  img="kvp-kind-rootfs:${tag}"
  if docker image inspect "$img" >/dev/null 2>&1; then echo "$img"; return; fi
  apt_install debootstrap
  kindfiles="$(kind_module_dir)/images/base/files"
  suite=$(. /etc/os-release && echo "${VERSION_CODENAME}")
  mirror=$(debian_mirror)
  rootfs=$(mktemp -d /tmp/kvp-kind-rootfs.XXXXXX)
  trap 'rm -rf "${rootfs:-}" "${rootfs:-}.log"' EXIT
  log "debootstrap ${suite} for the kind node (about 80 s)"
  debootstrap --variant=minbase \
    --include=systemd,systemd-sysv,dbus,containerd,runc,iptables,nftables,iproute2,procps,containernetworking-plugins,ca-certificates,util-linux,mount,kmod,conntrack,ethtool,socat,ebtables,jq,libseccomp2,bash,curl \
    "$suite" "$rootfs" "$mirror" >"${rootfs}.log" 2>&1 || { tail -20 "${rootfs}.log" >&2; die "debootstrap failed"; }
  rm -f "${rootfs}.log"
  # kind's base image steps (its images/base/Dockerfile), on Debian's packages.
  install -m0755 "$kindfiles"/usr/local/bin/* "$rootfs/usr/local/bin/"
  mkdir -p "$rootfs"/kind/bin "$rootfs"/kind/offline-images "$rootfs"/etc/containerd \
    "$rootfs"/etc/systemd/system/kubelet.service.d "$rootfs"/etc/kubernetes/manifests "$rootfs"/opt/cni/bin
  install -m0644 "$kindfiles"/kind/README.txt "$rootfs/kind/"
  install -m0755 "$kindfiles"/kind/bin/* "$rootfs/kind/bin/"
  install -m0644 "$kindfiles"/etc/crictl.yaml "$rootfs/etc/"
  install -m0644 "$kindfiles"/etc/containerd/* "$rootfs/etc/containerd/"
  install -m0644 "$kindfiles"/etc/default/* "$rootfs/etc/default/"
  install -m0644 "$kindfiles"/etc/sysctl.d/* "$rootfs/etc/sysctl.d/"
  find "$kindfiles/etc/systemd/system" -maxdepth 1 -type f -exec install -m0644 {} "$rootfs/etc/systemd/system/" \;
  install -m0644 "$kindfiles"/etc/systemd/system/kubelet.service.d/* "$rootfs/etc/systemd/system/kubelet.service.d/"
  chmod 755 "$rootfs/kind" "$rootfs/kind/bin"
  # The node container cannot set oom_score_adj below its own (no
  # CAP_SYS_RESOURCE here), so containerd must not try.
  sed -i 's/restrict_oom_score_adj = false/restrict_oom_score_adj = true/' "$rootfs/etc/containerd/config.toml"
  find "$rootfs/lib/systemd/system/sysinit.target.wants/" -name systemd-tmpfiles-setup.service -delete
  rm -f "$rootfs"/lib/systemd/system/multi-user.target.wants/* "$rootfs"/etc/systemd/system/*.wants/* \
    "$rootfs"/lib/systemd/system/local-fs.target.wants/* "$rootfs"/lib/systemd/system/sockets.target.wants/*udev* \
    "$rootfs"/lib/systemd/system/sockets.target.wants/*initctl* "$rootfs"/lib/systemd/system/basic.target.wants/*
  echo "ReadKMsg=no" >>"$rootfs/etc/systemd/journald.conf"
  ln -sf /usr/lib/systemd/systemd "$rootfs/sbin/init"
  ln -sf /usr/bin/containerd "$rootfs/usr/local/bin/containerd"
  for p in host-local loopback ptp portmap bridge; do ln -sf "/usr/lib/cni/$p" "$rootfs/opt/cni/bin/$p"; done
  chroot "$rootfs" ctr oci spec |
    jq '.hooks.createContainer[.hooks.createContainer | length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' |
    jq 'del(.process.rlimits)' >"$rootfs/etc/containerd/cri-base.json"
  chroot "$rootfs" systemctl enable kubelet.service containerd.service undo-mount-hacks.service >/dev/null 2>&1
  chroot "$rootfs" systemctl mask systemd-binfmt.service >/dev/null 2>&1
  # This directory's wrappers, in front of what they wrap.
  mv "$rootfs/usr/local/bin/entrypoint" "$rootfs/usr/local/bin/entrypoint.kind"
  install -m0755 "${HERE}/node-entrypoint.sh" "$rootfs/usr/local/bin/entrypoint"
  install -m0755 "${HERE}/ctr-wrapper.sh" "$rootfs/usr/local/bin/ctr"
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  log "importing ${img}"
  tar -C "$rootfs" -c . | docker import \
    -c 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' \
    -c 'ENV container=docker' - "$img" >/dev/null
  rm -rf "$rootfs"
  echo "$img"
}

main
