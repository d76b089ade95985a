#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs KubeVirt's own Plugins e2e (tests/plugin_test.go of the release, in
# the guide's shape since kubevirt/patches/0004) with KubeVirt's own test
# framework against the project's kind cluster (or the one KUBECONFIG
# names), which runs the patched build tagged TAG (kubevirt/deploy.sh) and
# deploy/.
#
#   kubevirt/e2e.sh TAG [test binary flags, e.g. -ginkgo.focus=REGEXP]
#   kubevirt/e2e.sh --compile   only compile the e2e binary (no cluster)
#
# It builds, on the patched tree kubevirt/build.sh made:
#   - the e2e binary: tests/plugin_test.go with kubevirt/e2e/suite_test.go
#     in a package of their own, so that only what they import is compiled;
#   - the tests' helper images, loaded into the kind nodes:
#     localhost/kubevirt/test-domain-hook-sidecar:TAG (the sidecar),
#     localhost/kubevirt-plugins/example-node-hook-plugin:TAG (the node hook
#     server), localhost/kubevirt-plugins/alpine-container-disk-demo:TAG (the
#     guest the tests boot as their Alpine: the project's test guest on a
#     disk SeaBIOS boots through SYSLINUX, with a console to log in on).
# The specs' output and a JUnit report go to bin/kubevirt-e2e/.
set -euo pipefail
source "$(dirname "$0")/../hack/lib.sh"
[ $# -ge 1 ] || die "usage: kubevirt/e2e.sh TAG [test binary flags] | --compile"
build=$("${ROOT}/kubevirt/build.sh")
src="${build}/src"
source "${ROOT}/kubevirt/version.sh"
export "${KUBEVIRT_GO_ENV[@]}"

# compile: the e2e binary, from the release's tests/plugin_test.go (as
# patched) and kubevirt/e2e/suite_test.go, in a package of their own.
compile() {
  hold_lock "${build}/.e2e-compile.lock" "another compile of the e2e binary to finish"
  log "kubevirt e2e: compiling tests/plugin_test.go with kubevirt/e2e/suite_test.go"
  local pkg="${src}/tests/plugins-e2e"
  rm -rf "$pkg"
  mkdir -p "$pkg"
  cp "${src}/tests/plugin_test.go" "${ROOT}/kubevirt/e2e/suite_test.go" "$pkg/"
  (cd "$src" && CGO_ENABLED=1 go test -c -tags selinux -o "${build}/plugins-e2e.test" ./tests/plugins-e2e)
}
if [ "$1" = --compile ]; then
  compile
  exit 0
fi
(compile)

tag=$1
shift
# The project's kind cluster, unless KUBECONFIG names another.
clusterenv=$("${ROOT}/hack/kind/cluster.sh" env)
: "${KUBECONFIG:=$(sed -n 's/^KUBECONFIG=//p' <<<"$clusterenv")}"
kubectl=$(sed -n 's/^KVP_KUBECTL=//p' <<<"$clusterenv")
art="${BIN}/kubevirt-e2e"
rm -rf "$art"
mkdir -p "$art"

# image NAME CONTEXT: docker build CONTEXT as NAME (legacy builder: no
# frontend to fetch); its output only on failure.
image() {
  local out
  out=$(DOCKER_BUILDKIT=0 docker build -t "$1" "$2" 2>&1) || { printf '%s\n' "$out" >&2; die "docker build of $1 failed"; }
}

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
log "kubevirt e2e: the helper images"
mkdir -p "${ctx}/sidecar" "${ctx}/node" "${ctx}/disk/disk"
(cd "$src" && CGO_ENABLED=0 go build -o "${ctx}/sidecar/test-domain-hook-sidecar" ./cmd/plugin-sidecars/test-domain-hook &&
  CGO_ENABLED=0 go build -o "${ctx}/node/example-node-hook-plugin" ./cmd/example-node-hook-plugin)
# The release's sidecar image keeps its binary in /usr/bin, where the
# tests' injection policy runs it; it runs as a user that is not root.
printf 'FROM scratch\nCOPY test-domain-hook-sidecar /usr/bin/test-domain-hook-sidecar\nUSER 107:107\n' >"${ctx}/sidecar/Dockerfile"
printf 'FROM scratch\nCOPY example-node-hook-plugin /usr/bin/example-node-hook-plugin\nENTRYPOINT ["/usr/bin/example-node-hook-plugin"]\n' >"${ctx}/node/Dockerfile"
cp "$("${ROOT}/hack/build-guest.sh" --disk)/disk.img" "${ctx}/disk/disk/guest.img"
# A container disk: the image in /disk, readable by QEMU's user (107).
printf 'FROM scratch\nCOPY --chown=107:107 disk/ /disk/\n' >"${ctx}/disk/Dockerfile"
images=(
  "localhost/kubevirt/test-domain-hook-sidecar:${tag}"
  "localhost/kubevirt-plugins/example-node-hook-plugin:${tag}"
  "localhost/kubevirt-plugins/alpine-container-disk-demo:${tag}"
)
image "${images[0]}" "${ctx}/sidecar"
image "${images[1]}" "${ctx}/node"
image "${images[2]}" "${ctx}/disk"
"${ROOT}/hack/kind/cluster.sh" load "${images[@]}" >&2
# A migration target asks for the container disk by the digest the source
# ran (kubevirt/deploy.sh, kubevirt_digest_aliases).
"${ROOT}/kubevirt/deploy.sh" digest-aliases "${images[2]}" >&2

log "kubevirt e2e: running the Plugins specs"
# The suite creates its namespaces and fails on ones a stopped run left.
"$kubectl" --kubeconfig "$KUBECONFIG" delete namespace --ignore-not-found --wait=true --timeout=5m \
  kubevirt-test-default1 kubevirt-test-alternative1 kubevirt-test-operator1 kubevirt-test-privileged1 >&2
cd "$src"
set +e
"${build}/plugins-e2e.test" \
  -kubeconfig "$KUBECONFIG" -kubectl-path "$kubectl" -installed-namespace kubevirt \
  -container-prefix localhost/kubevirt -container-tag "$tag" \
  -utility-container-prefix localhost/kubevirt-plugins -utility-container-tag "$tag" \
  -artifacts "$art" -ginkgo.v -ginkgo.no-color -ginkgo.timeout 60m \
  -ginkgo.junit-report "${art}/junit.xml" "$@" 2>&1 | tee "${art}/output.txt"
rc=${PIPESTATUS[0]}
set -e
grep -E '^(Ran [0-9]+ of [0-9]+ Specs|SUCCESS!|FAIL!)' "${art}/output.txt" >&2 || true
exit "$rc"
