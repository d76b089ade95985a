#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the test guest from Debian's packages, downloading nothing else:
# the kernel of linux-image-amd64 and an initramfs of busybox-static, the
# modules listed in hack/images/guest/modules and hack/images/guest/init.
# Prints the directory holding vmlinuz and initrd.img; it is named after a
# hash of the inputs and the kernel's version, so a built guest is reused.
# With --disk it also holds disk.img: a disk that a BIOS boots, through
# SYSLINUX on a FAT file system, into the same kernel and initramfs with
# kvp.console=login (the init then offers a console to log in on, as
# KubeVirt's e2e tests expect of their guest).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
# One build at a time: make test runs the cluster scenario beside the
# other integration tests, and both may ask for the same guest.
hold_lock "${BIN}/.guest.lock" "another hack/build-guest.sh to finish"

ctx="${ROOT}/hack/images/guest"
apt_install cpio binutils
kpkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-/ {print $2; exit}')
[ -n "$kpkg" ] || die "no kernel package behind linux-image-amd64 in the apt sources"
bbver=$(apt-cache policy busybox-static | awk '/Candidate:/ {print $2}')
tag=$( (cat "$0" "$ctx"/*; echo "$kpkg $bbver") | sha256sum | cut -c1-12)
out="${BIN}/guest/${tag}"
disk=0
[ "${1:-}" != --disk ] || disk=1

# disk_image: ${out}/disk.img from the built kernel and initramfs. The FAT
# file system fills the disk from its first sector (no partition table):
# SeaBIOS runs that sector, where syslinux puts its boot code.
disk_image() {
  [ -f "${out}/disk.img" ] && return
  apt_install dosfstools mtools syslinux syslinux-common
  local tmp
  tmp=$(mktemp -d /tmp/kvp-guest-disk.XXXXXX)
  truncate -s 64M "${tmp}/disk.img"
  mkfs.vfat -i 4b565031 -n KVPGUEST "${tmp}/disk.img" >/dev/null
  printf 'DEFAULT guest\nPROMPT 0\nTIMEOUT 0\nLABEL guest\n  KERNEL /vmlinuz\n  INITRD /initrd.img\n  APPEND console=ttyS0 kvp.console=login quiet panic=-1\n' >"${tmp}/syslinux.cfg"
  cp "${out}/vmlinuz" "${out}/initrd.img" "$tmp/"
  MTOOLS_SKIP_CHECK=1 mcopy -i "${tmp}/disk.img" "${tmp}/syslinux.cfg" "${tmp}/vmlinuz" "${tmp}/initrd.img" ::/
  syslinux --install "${tmp}/disk.img"
  mv "${tmp}/disk.img" "${out}/disk.img"
  rm -rf "$tmp"
}

if [ -f "${out}/vmlinuz" ] && [ -f "${out}/initrd.img" ]; then
  [ "$disk" = 0 ] || disk_image
  echo "$out"
  exit 0
fi
work=$(mktemp -d /tmp/kvp-guest.XXXXXX)
trap 'rm -rf "$work"' EXIT
log "building the test guest from ${kpkg} and busybox-static ${bbver}"
(cd "$work" && apt-get download -q "$kpkg" busybox-static >/dev/null 2>&1) || die "apt-get download ${kpkg} busybox-static failed"
mkdir -p "$work/kernel" "$work/busybox" "$work/root"/{bin,dev,proc,sys,mnt,lib/modules}
dpkg-deb -x "$work"/linux-image-*.deb "$work/kernel"
dpkg-deb -x "$work"/busybox-static_*.deb "$work/busybox"
moddir=$(ls -d "$work"/kernel/lib/modules/*)
grep -v '^#' "$ctx/modules" >"$work/root/lib/modules/order"
loaded=" "
while read -r m; do
  ko=$(find "$moddir" -name "${m}.ko" | head -1)
  [ -n "$ko" ] || die "module ${m} is not in ${kpkg}"
  for dep in $(strings "$ko" | sed -n 's/^depends=//p' | tr ',' ' '); do
    case "$loaded" in *" ${dep} "*) ;; *) die "module ${m} needs ${dep} loaded before it (hack/images/guest/modules)" ;; esac
  done
  cp "$ko" "$work/root/lib/modules/${m}.ko"
  loaded="${loaded}${m} "
done <"$work/root/lib/modules/order"
install -m 0755 "$work/busybox/bin/busybox" "$work/root/bin/busybox"
install -m 0755 "$ctx/init" "$work/root/init"
mkdir -p "$out"
(cd "$work/root" && find . | sort | cpio -o -H newc --quiet | gzip -9) >"${out}/initrd.img.tmp"
cp "$work"/kernel/boot/vmlinuz-* "${out}/vmlinuz.tmp"
mv "${out}/initrd.img.tmp" "${out}/initrd.img"
mv "${out}/vmlinuz.tmp" "${out}/vmlinuz"
chmod 0644 "${out}/vmlinuz" "${out}/initrd.img"
[ "$disk" = 0 ] || disk_image
echo "$out"
