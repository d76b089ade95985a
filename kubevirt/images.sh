#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds KubeVirt's component images from Debian packages and the programs
# kubevirt/build.sh makes, with the local Docker engine and nothing pulled:
#
#   localhost/kubevirt/virt-operator, virt-api, virt-controller,
#     virt-exportproxy   the binary on Debian (this machine's release)
#   localhost/kubevirt/virt-handler   with virt-chroot and the tools it execs
#   localhost/kubevirt/virt-launcher  Debian 13's libvirt and QEMU, the
#     launcher's programs, KubeVirt's libvirt files, the virtqemud shim
#   localhost/kubevirt-plugins/guest-kernel  the test guest
#     (hack/build-guest.sh) as a firmware.kernelBoot.container image
#
# all tagged TAG. The bases are root filesystems made with debootstrap from
# the Debian mirror apt is configured with (images/<flavor>.packages),
# imported with `docker import` and tagged with a hash of their inputs, so
# they are made once; the two Debian releases are bootstrapped side by
# side. An image whose inputs (base, Dockerfile, files) did not change is
# not rebuilt: it carries their hash as a label. Prints each image's size.
#
#   kubevirt/images.sh BINDIR ETCDIR TAG
#   kubevirt/images.sh --bases   only the Debian bases (make setup)
#
# BINDIR holds the programs (kubevirt/build.sh's bin/), ETCDIR libvirt's
# files (its etc/: libvirt/qemu.conf, libvirt/virtqemud.conf,
# libvirt/hooks/qemu).
set -euo pipefail
source "$(dirname "$0")/../hack/lib.sh"
HERE="${ROOT}/kubevirt"
IMAGES="${HERE}/images"
source "${HERE}/version.sh"

REGISTRY=localhost/kubevirt
GUEST_REPO=localhost/kubevirt-plugins/guest-kernel
# Debian's release of the launcher: libvirt 11.3 and QEMU 10.0.
LAUNCHER_SUITE=trixie
HASH_LABEL=io.kubevirt-plugins.inputs

# The images: name, base flavor (a *.packages file, or scratch), files
# from BINDIR, files from ETCDIR (relative to it).
IMAGE_SPECS=(
  "virt-operator base virt-operator -"
  "virt-api base virt-api -"
  "virt-controller base virt-controller -"
  "virt-exportproxy base virt-exportproxy -"
  "virt-handler handler virt-handler,virt-chroot -"
  "virt-launcher launcher virt-launcher,virt-launcher-monitor,virt-freezer,virt-probe,virt-tail,libvirt-hook-client,container-disk,node-labeller.sh libvirt/qemu.conf,libvirt/virtqemud.conf,libvirt/hooks/qemu"
)

usage() { die "usage: kubevirt/images.sh BINDIR ETCDIR TAG | --bases"; }
bases_only=
if [ "${1:-}" = --bases ]; then
  [ $# -eq 1 ] || usage
  bases_only=1
else
  [ $# -eq 3 ] || usage
  [ -d "$1" ] || die "BINDIR ${1} is not a directory (kubevirt/build.sh's bin/)"
  [ -d "$2" ] || die "ETCDIR ${2} is not a directory (kubevirt/build.sh's etc/)"
  bindir=$(cd "$1" && pwd)
  etcdir=$(cd "$2" && pwd)
  tag=$3
  [[ "$tag" =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || die "TAG ${tag} is not a valid image tag"
fi

command -v docker >/dev/null || die "docker is not installed: run make setup"
docker info >/dev/null 2>&1 || die "the Docker engine does not answer: run make setup"
[ "$(id -u)" -eq 0 ] || die "debootstrap and chroot need root"

# Every input is there before anything is built.
missing=()
[ -n "$bases_only" ] || for spec in "${IMAGE_SPECS[@]}"; do
  read -r _ _ bins etcs <<<"$spec"
  for f in ${bins//,/ }; do [ -x "${bindir}/${f}" ] || missing+=("${bindir}/${f}"); done
  [ "$etcs" = - ] && continue
  for f in ${etcs//,/ }; do [ -f "${etcdir}/${f}" ] || missing+=("${etcdir}/${f}"); done
done
[ ${#missing[@]} -eq 0 ] || die "missing (or not executable): ${missing[*]}"

work=$(mktemp -d /var/tmp/kvp-kubevirt-images.XXXXXX)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

host_suite=$(. /etc/os-release && echo "${VERSION_CODENAME}")
[ -n "$host_suite" ] || die "no VERSION_CODENAME in /etc/os-release"

# suite_of FLAVOR: the Debian release a base is made of. The components
# are built on this machine, so their bases are its release.
suite_of() {
  case "$1" in
    launcher) echo "$LAUNCHER_SUITE" ;;
    *) echo "$host_suite" ;;
  esac
}

# packages FLAVOR: the packages of images/FLAVOR.packages, one a line.
packages() { sed -e 's/#.*//' -e 's/[[:space:]]//g' "${IMAGES}/$1.packages" | grep -v '^$'; }

# minbase SUITE DIR: debootstrap's minbase of SUITE with ca-certificates,
# which every base has.
minbase() {
  local suite=$1 dir=$2
  debootstrap --variant=minbase --include=ca-certificates "$suite" "$dir" "$mirror" \
    >"${work}/debootstrap-${suite}.log" 2>&1 ||
    { tail -25 "${work}/debootstrap-${suite}.log" >&2; die "debootstrap of ${suite} failed"; }
}

# make_rootfs FLAVOR DIR IMAGE: FLAVOR's packages installed by apt in the
# minbase at DIR (debootstrap --include orders some of trixie's
# pre-dependencies wrongly, apt does not), KubeVirt's users, nothing that
# names the mirror; then imported as IMAGE.
make_rootfs() {
  local flavor=$1 dir=$2 image=$3
  # No service starts in a chroot.
  printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d"
  chmod 0755 "$dir/usr/sbin/policy-rc.d"
  # (dpkg's scripts warn that /proc is not mounted; nothing here needs it.)
  # shellcheck disable=SC2046 # one word a package
  if ! { chroot "$dir" apt-get update -q &&
    DEBIAN_FRONTEND=noninteractive chroot "$dir" apt-get install -y -q --no-install-recommends $(packages "$flavor"); } \
    >"${work}/apt-${flavor}.log" 2>&1; then
    tail -25 "${work}/apt-${flavor}.log" >&2
    die "installing images/${flavor}.packages in the ${flavor} base failed"
  fi
  rm -f "$dir/usr/sbin/policy-rc.d"
  # KubeVirt's users: 1001 runs the controllers, qemu (107:107) owns the
  # launcher's files and QEMU. A package that took either id would leave
  # the image unusable, so that is an error, not a surprise later.
  local uid name sys=-r
  case "$flavor" in
    base) uid=1001 name=nonroot-user sys= ;;
    *) uid=107 name=qemu ;;
  esac
  if chroot "$dir" getent passwd "$uid" >/dev/null || chroot "$dir" getent group "$uid" >/dev/null; then
    die "uid/gid ${uid} is taken in the ${flavor} base: $(chroot "$dir" getent passwd "$uid")"
  fi
  chroot "$dir" groupadd $sys -g "$uid" "$name"
  chroot "$dir" useradd $sys -u "$uid" -g "$uid" -m -d "/home/${name}" -s /bin/bash "$name"
  # The mirror is this machine's business, not the image's; so are the
  # package lists and archives. Documentation but for the licenses goes.
  rm -f "$dir/etc/apt/sources.list" "$dir"/etc/apt/sources.list.d/*
  rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/cache/apt/*.bin "$dir"/var/lib/apt/lists/* \
    "$dir"/usr/share/man "$dir"/usr/share/info "$dir"/usr/share/locale
  find "$dir/var/log" -type f -delete
  find "$dir/usr/share/doc" -type f ! -name copyright -delete
  # docker import sets no PATH; the images' programs exec others by name.
  tar -C "$dir" --numeric-owner --xattrs --xattrs-include='security.capability' -c . |
    docker import -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - "$image" >/dev/null
}

# base_image FLAVOR: the name of FLAVOR's base, tagged by the hash of its
# inputs (release, package list, the functions that make it).
base_image() {
  local flavor=$1 suite
  suite=$(suite_of "$flavor")
  echo "kvp-kubevirt-rootfs:${flavor}-${suite}-$( { echo "$suite"; cat "${IMAGES}/${flavor}.packages"; declare -f minbase make_rootfs; } | sha256sum | cut -c1-12)"
}

# bases: every missing base, one job per Debian release (one debootstrap,
# then its flavors one after the other), the releases side by side.
bases() {
  local flavors=() f suite jobs=() pids=() s i
  for spec in "${IMAGE_SPECS[@]}"; do
    read -r _ f _ _ <<<"$spec"
    [[ " ${flavors[*]} " == *" ${f} "* ]] || flavors+=("$f")
  done
  declare -A todo=()
  for f in "${flavors[@]}"; do
    if docker image inspect "$(base_image "$f")" >/dev/null 2>&1; then continue; fi
    suite=$(suite_of "$f")
    todo[$suite]+="${f} "
  done
  [ ${#todo[@]} -eq 0 ] && return 0
  apt_install debootstrap
  mirror=$(debian_mirror)
  for s in "${!todo[@]}"; do
    (
      t0=$SECONDS
      log "debootstrap ${s} (the ${todo[$s]% } base)"
      minbase "$s" "${work}/minbase-${s}"
      echo "$((SECONDS - t0))" >"${work}/time-debootstrap-${s}"
      for f in ${todo[$s]}; do
        t0=$SECONDS
        log "installing images/${f}.packages for $(base_image "$f")"
        rm -rf "${work}/rootfs-${f}"
        cp -a "${work}/minbase-${s}" "${work}/rootfs-${f}"
        make_rootfs "$f" "${work}/rootfs-${f}" "$(base_image "$f")"
        rm -rf "${work}/rootfs-${f}"
        # The flavor's earlier bases are of no more use.
        docker images --format '{{.Repository}}:{{.Tag}}' "kvp-kubevirt-rootfs" |
          grep "^kvp-kubevirt-rootfs:${f}-" | grep -vx "$(base_image "$f")" | xargs -r docker rmi >/dev/null 2>&1 || true
        log "${f} base ready in $((SECONDS - t0))s"
        echo "$((SECONDS - t0))" >"${work}/time-base-${f}"
      done
      rm -rf "${work}/minbase-${s}"
    ) &
    pids+=($!)
    jobs+=("$s")
  done
  local failed=()
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || failed+=("${jobs[$i]}")
  done
  [ ${#failed[@]} -eq 0 ] || die "the base images of ${failed[*]} could not be made (see above)"
}

# dbuild IMAGE CONTEXT LABEL: docker build with the legacy builder (BuildKit
# may want to fetch its frontend); its output is shown only on failure.
dbuild() {
  local image=$1 ctx=$2 label=$3 out
  shift 3
  out=$(DOCKER_BUILDKIT=0 docker build --label "${HASH_LABEL}=${label}" -t "$image" "$@" "$ctx" 2>&1) ||
    { printf '%s\n' "$out" >&2; die "docker build of ${image} failed"; }
}

# inputs_hash CONTEXT [EXTRA]: a hash of every file in CONTEXT (path, mode,
# content) and EXTRA.
inputs_hash() {
  (cd "$1" && find . -type f -printf '%p %m\n' | LC_ALL=C sort && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
    echo "${2:-}") | sha256sum | cut -c1-32
}

rows=()
# build_image NAME IMAGE CONTEXT [BUILD-ARGS...]: build IMAGE from CONTEXT
# unless an image of the same inputs has that name already.
build_image() {
  local name=$1 image=$2 ctx=$3
  shift 3
  local base_id="" hash current status=cached t0=$SECONDS
  if [ $# -gt 0 ]; then base_id=$(docker image inspect --format '{{.Id}}' "${1#BASE=}"); set -- --build-arg "$1"; fi
  hash=$(inputs_hash "$ctx" "$base_id")
  current=$(docker image inspect --format "{{ index .Config.Labels \"${HASH_LABEL}\" }}" "$image" 2>/dev/null || true)
  if [ "$current" != "$hash" ]; then
    log "building ${image}"
    dbuild "$image" "$ctx" "$hash" "$@"
    status=built
  fi
  local size
  size=$(docker image inspect --format '{{.Size}}' "$image" | awk '{printf "%.1f MB", $1 / 1000000}')
  rows+=("${name}|${image}|${size}|${status}|$((SECONDS - t0))s")
}

start=$SECONDS
bases
if [ -n "$bases_only" ]; then
  log "KubeVirt ${KUBEVIRT_VERSION} images' Debian bases ready in $((SECONDS - start))s"
  exit 0
fi

# The components: a context of the files the Dockerfile copies.
for spec in "${IMAGE_SPECS[@]}"; do
  read -r name flavor bins etcs <<<"$spec"
  ctx="${work}/ctx-${name}"
  mkdir -p "${ctx}/bin"
  cp "${IMAGES}/Dockerfile.${name}" "${ctx}/Dockerfile"
  echo "$KUBEVIRT_VERSION" >"${ctx}/version"
  # Linked, not copied, where the file system allows (they are large) and
  # the mode is already the image's.
  for f in ${bins//,/ }; do
    if [ "$(stat -c %a "${bindir}/${f}")" = 755 ] && ln -f "${bindir}/${f}" "${ctx}/bin/${f}" 2>/dev/null; then
      continue
    fi
    install -m 0755 "${bindir}/${f}" "${ctx}/bin/${f}"
  done
  if [ "$etcs" != - ]; then
    for f in ${etcs//,/ }; do
      install -D -m "$(stat -c %a "${etcdir}/${f}")" "${etcdir}/${f}" "${ctx}/etc/${f}"
    done
  fi
  [ "$name" != virt-launcher ] || install -m 0755 "${IMAGES}/virtqemud" "${ctx}/virtqemud"
  build_image "$name" "${REGISTRY}/${name}:${tag}" "$ctx" "BASE=$(base_image "$flavor")"
  rm -rf "$ctx"
done

# The test guest as a kernel-boot container.
guest=$("${ROOT}/hack/build-guest.sh")
ctx="${work}/ctx-guest-kernel"
mkdir -p "${ctx}/boot"
cp "${IMAGES}/Dockerfile.guest-kernel" "${ctx}/Dockerfile"
install -m 0644 "${guest}/vmlinuz" "${ctx}/boot/vmlinuz"
install -m 0644 "${guest}/initrd.img" "${ctx}/boot/initramfs"
build_image guest-kernel "${GUEST_REPO}:${tag}" "$ctx"

printf '%-18s %-52s %10s %-7s %s\n' IMAGE NAME SIZE STATUS TIME
for r in "${rows[@]}"; do
  IFS='|' read -r n i s st t <<<"$r"
  printf '%-18s %-52s %10s %-7s %s\n' "$n" "$i" "$s" "$st" "$t"
done
for f in "${work}"/time-debootstrap-*; do
  [ -e "$f" ] || continue
  printf '%-18s %-52s %10s %-7s %ss\n' "debootstrap" "${f##*time-debootstrap-} minbase" - "done" "$(cat "$f")"
done
for f in "${work}"/time-base-*; do
  [ -e "$f" ] || continue
  b=$(base_image "${f##*time-base-}")
  printf '%-18s %-52s %10s %-7s %ss\n' "base ${f##*time-base-}" "$b" \
    "$(docker image inspect --format '{{.Size}}' "$b" | awk '{printf "%.1f MB", $1 / 1000000}')" built "$(cat "$f")"
done
# Keep the four newest tags of each image (a patched and a release build,
# for two checkouts); older builds only fill the disk.
for repo in "${REGISTRY}"/virt-{operator,api,controller,exportproxy,handler,launcher} "$GUEST_REPO"; do
  docker images --format '{{.Repository}}:{{.Tag}}' "$repo" | grep -vxF "${repo}:${tag}" | tail -n +4 |
    xargs -r docker rmi >/dev/null 2>&1 || true
done
log "KubeVirt ${KUBEVIRT_VERSION} images tagged ${tag} in $((SECONDS - start))s"
