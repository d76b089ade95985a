#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds KubeVirt's own programs from its released Go module, with the
# patch series in kubevirt/patches applied and the framework's runtimes
# (launcher-runtime, handler-runtime and what they need) linked from this
# checkout. Prints the output directory, which holds:
#
#   src/   the patched source tree (go.mod pointing at this checkout)
#   bin/   every program the component images carry
#   etc/   the libvirt configuration and hook virt-launcher's image carries
#   times  seconds per step
#
# The output is cached outside the checkout, under a name made from the
# release, this script, the patches and the sources of the framework's
# modules KubeVirt links, and from where the checkout is (the source
# tree's go.mod points into it): the same checkout reuses it, and any
# change to them, or a checkout elsewhere, builds again (the Go build
# cache keeps that rebuild short, about 80 s).
#
#   kubevirt/build.sh            build unless cached; print the directory
#   kubevirt/build.sh --hash     print the cache key only
#   KVP_KUBEVIRT_PRISTINE=1 ...  build without the framework's patches (the
#                                 release as its users run it, for comparison)
set -euo pipefail
source "$(dirname "$0")/../hack/lib.sh"
HERE="${ROOT}/kubevirt"
source "${HERE}/version.sh"

export "${KUBEVIRT_GO_ENV[@]}"

# Programs, by image: ./cmd/<path> for each.
COMMANDS=(
  virt-operator virt-api virt-controller virt-exportproxy
  virt-handler virt-chroot
  virt-launcher virt-launcher-monitor virt-freezer virt-probe virt-tail
  virt-launcher/libvirt-hook-client
)

# patches lists the series to apply: the build patches always, the
# framework's unless a pristine build is asked for.
patches() {
  local p
  for p in "${HERE}"/patches/*.patch; do
    if [ "${KVP_KUBEVIRT_PRISTINE:-0}" = 1 ] && ! grep -q '^Series: build$' "$p"; then
      continue
    fi
    printf '%s\n' "$p"
  done
}

cache_key() {
  {
    echo "${KUBEVIRT_VERSION} pristine=${KVP_KUBEVIRT_PRISTINE:-0} $(go env GOVERSION)"
    sha256sum "${HERE}/build.sh" "${HERE}/version.sh" $(patches)
    if [ "${KVP_KUBEVIRT_PRISTINE:-0}" != 1 ]; then
      (cd "$ROOT" && find "${LINKED_MODULES[@]}" -type f \( -name '*.go' ! -name '*_test.go' -o -name go.mod -o -name go.sum \) \
        -not -path '*/testdata/*' | LC_ALL=C sort | xargs sha256sum)
    fi
  } | sha256sum | cut -c1-16
}

key=$(cache_key)
if [ "${1:-}" = --hash ]; then
  echo "$key"
  exit 0
fi
out="${KVP_KUBEVIRT_CACHE:-/var/cache/kubevirt-plugins/kubevirt}/${key}"
# One build of a key at a time: a second caller (make test's unit tests
# beside its cluster scenario, say) waits for the first and reuses its
# output instead of building it again over the first's partial tree.
hold_lock "${out}.lock" "the build of KubeVirt ${key} already under way"
if [ -f "${out}/done" ]; then
  echo "$out"
  exit 0
fi

apt_install libvirt-dev pkg-config gcc libc6-dev patch bc
times="${out}.times"
: >"$times"
step_start=0
step() { step_start=$(date +%s.%N); log "kubevirt: $*"; }
step_done() { printf '%-34s %7.1f s\n' "$1" "$(echo "$(date +%s.%N) - ${step_start}" | bc)" >>"$times"; }
total_start=$(date +%s.%N)

# 1. The release's source, from the Go module proxy.
step "fetching kubevirt.io/kubevirt@${KUBEVIRT_VERSION}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && go mod init kvp.local/fetch >/dev/null 2>&1 &&
  go mod download -json "kubevirt.io/kubevirt@${KUBEVIRT_VERSION}") >"${tmp}/module.json"
moddir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' "${tmp}/module.json")
commit=$(sed -n 's/^[[:space:]]*"Hash": "\(.*\)",$/\1/p' "${tmp}/module.json" | head -1)
[ -d "$moddir" ] || die "the module proxy gave no source for kubevirt.io/kubevirt@${KUBEVIRT_VERSION}"
build="${out}.partial"
rm -rf "$build"
mkdir -p "$build"
cp -r "$moddir" "${build}/src"
chmod -R u+w "${build}/src"
cd "${build}/src"
# The release's go.work points at ./staging, which a module zip leaves out.
rm -f go.work go.work.sum
step_done "source"

# 2. The module graph: kubevirt.io/api and client-go from their released
# modules instead of ./staging; without the modules the proxy refuses
# (their code is compiled out by the build patches); with the framework's
# modules from this checkout.
step "module graph"
go mod edit \
  -replace "kubevirt.io/api=kubevirt.io/api@${KUBEVIRT_VERSION}" \
  -replace "kubevirt.io/client-go=kubevirt.io/client-go@${KUBEVIRT_VERSION}"
for m in "${UNSERVED_MODULES[@]}"; do
  go mod edit -droprequire "$m"
done
if [ "${KVP_KUBEVIRT_PRISTINE:-0}" != 1 ]; then
  for m in "${LINKED_MODULES[@]}"; do
    go mod edit -require "${FRAMEWORK_MODULE}/${m}@v0.0.0" -replace "${FRAMEWORK_MODULE}/${m}=${ROOT}/${m}"
  done
fi
step_done "module graph"

# 3. The patch series.
for p in $(patches); do
  log "kubevirt: applying $(basename "$p")"
  patch -p1 -s --no-backup-if-mismatch <"$p" || die "$(basename "$p") does not apply to ${KUBEVIRT_VERSION}"
done

# 4. The programs, with the version stamps hack/version.sh would give.
v=kubevirt.io/client-go/version
ldflags="-X ${v}.gitVersion=${KUBEVIRT_VERSION} -X ${v}.gitCommit=${commit} -X ${v}.gitTreeState=dirty"
step "resolving dependencies"
go list -deps -tags selinux "${COMMANDS[@]/#/./cmd/}" >/dev/null
step_done "dependencies"
mkdir -p "${build}/bin"
# One go build for every program (each named after its directory): the
# links overlap the compiles, and the package graph is loaded once.
step "go build ${COMMANDS[*]/#/./cmd/}"
go build -tags selinux -ldflags "$ldflags" -o "${build}/bin/" "${COMMANDS[@]/#/./cmd/}"
step_done "programs"
step "container-disk"
gcc -static -O2 -o "${build}/bin/container-disk" cmd/container-disk-v2alpha/main.c
step_done "container-disk"

# Files the launcher image carries beside the programs (a module zip keeps
# no file modes).
install -m 0755 cmd/virt-launcher/node-labeller/node-labeller.sh "${build}/bin/"
install -d "${build}/etc/libvirt/hooks"
install -m 0644 cmd/virt-launcher/qemu.conf cmd/virt-launcher/virtqemud.conf "${build}/etc/libvirt/"
install -m 0755 cmd/virt-launcher/qemu "${build}/etc/libvirt/hooks/qemu"

# Every program starts (no panic at init, such as two registrations of
# one proto package).
for c in "${COMMANDS[@]}"; do
  b="${build}/bin/$(basename "$c")"
  o=$("$b" --help 2>&1) || die "$(basename "$c") --help failed: $o"
  ! grep -q '^panic' <<<"$o" || die "$(basename "$c") panics at start: $o"
done
"${build}/bin/container-disk" --no-op

printf '%-34s %7.1f s\n' total "$(echo "$(date +%s.%N) - ${total_start}" | bc)" >>"$times"
mv "$times" "${build}/times"
rm -rf "$out"
mv "$build" "$out"
touch "${out}/done"
# Keep the three newest builds (about 700 MB each), this one first.
ls -1dt "$(dirname "$out")"/*/ 2>/dev/null | tail -n +4 | sed 's|/$||' | while read -r d; do rm -rf "$d" "${d}.lock"; done
log "kubevirt: built in ${out} ($(tail -1 "${out}/times" | awk '{print $2}') s)"
echo "$out"
