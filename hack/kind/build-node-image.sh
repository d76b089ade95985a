#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds a kind node image for one Kubernetes version with nothing fetched
# from a registry or a download site: the root filesystem from Debian's
# packages (systemd, containerd, runc, the CNI plugins, iptables), every
# Kubernetes binary and image from the k8s.io/kubernetes Go module, etcd and
# CoreDNS from theirs at the versions kubeadm names, and kind's own node
# files from its module. Prints the image name. Cached: each stage is
# reused until its inputs change; a second run takes seconds.
#
#   hack/kind/build-node-image.sh [v1.36.3]
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
HERE="${ROOT}/hack/kind"
source "${HERE}/versions.sh"

version="${1:-${KIND_K8S_VERSION}}"
cache="${BIN}/kind"
mkdir -p "$cache"
export GOWORK=off GOFLAGS=-buildvcs=false CGO_ENABLED=0
# The legacy builder needs nothing but the engine (BuildKit may want to
# fetch its frontend).
export DOCKER_BUILDKIT=0

# dbuild builds an image quietly; its output is shown when it fails.
dbuild() {
  local out
  out=$(docker build -q "$@" 2>&1) || { printf '%s\n' "$out" >&2; die "docker build $* failed"; }
}

kind_bin() {
  if [ ! -x "${cache}/kind" ]; then
    log "building kind ${KIND_VERSION}"
    GOBIN="$cache" go install "sigs.k8s.io/kind@${KIND_VERSION}"
  fi
  echo "${cache}/kind"
}

# rootfs_image: the node's root filesystem (build-rootfs.sh).
rootfs_image() { "${HERE}/build-rootfs.sh"; }

# k8s_module VERSION DIR: a module in DIR whose tools are the Kubernetes
# binaries at VERSION. k8s.io/kubernetes requires its staging modules at
# v0.0.0 (it replaces them with its own tree); a module that builds it
# replaces each with the published v0.MINOR.PATCH.
k8s_module() {
  local v=$1 dir=$2
  local gomod staging
  [ -f "$dir/go.sum" ] && return
  mkdir -p "$dir"
  gomod=$(go mod download -json "k8s.io/kubernetes@${v}" | awk -F'"' '/"GoMod":/ {print $4}')
  staging=$(awk '/^\t?k8s\.io\/[a-z0-9-]+ v0\.0\.0$/ {print $1} /^require k8s\.io\/[a-z0-9-]+ v0\.0\.0$/ {print $2}' "$gomod" | sort -u)
  {
    echo "module kvp.local/kind-k8s"
    echo
    grep '^go ' "$gomod"
    echo
    echo "require k8s.io/kubernetes ${v}"
    echo
    echo "replace ("
    for m in $staging; do echo "	$m => $m v0${v#v1}"; done
    echo ")"
  } >"$dir/go.mod"
  local cmds=()
  for b in kubeadm kubelet kubectl kube-apiserver kube-controller-manager kube-scheduler kube-proxy; do
    cmds+=("k8s.io/kubernetes/cmd/${b}@${v}")
  done
  # go get adds what building these commands needs, and no more (go mod
  # tidy would also want the test dependencies of every package).
  (cd "$dir" && go get "${cmds[@]}" >"$dir/get.log" 2>&1) ||
    { tail -5 "$dir/get.log" >&2; rm -f "$dir/go.sum"; die "could not resolve k8s.io/kubernetes ${v} from the Go module proxy"; }
}

# k8s_bits VERSION: the binaries and control plane images, laid out as
# kind's --type file expects (kubernetes/server/bin/...), in one tarball.
k8s_bits() {
  local v=$1
  local dir="${cache}/k8s-${v}" minor major ldflags b rootfs
  local tgz="${dir}/kubernetes-server-linux-amd64.tar.gz"
  if [ -f "$tgz" ]; then echo "$tgz"; return; fi
  rootfs=$(rootfs_image)
  k8s_module "$v" "${dir}/src"
  major=1
  minor=$(echo "$v" | cut -d. -f2)
  ldflags="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X ${p}.gitVersion=${v} -X ${p}.gitMajor=${major} -X ${p}.gitMinor=${minor}"
    ldflags+=" -X ${p}.gitTreeState=clean -X ${p}.buildDate=1970-01-01T00:00:00Z"
  done
  local out="${dir}/tree/kubernetes/server/bin"
  mkdir -p "$out"
  local missing=()
  for b in kubeadm kubelet kubectl kube-apiserver kube-controller-manager kube-scheduler kube-proxy; do
    [ -x "$out/$b" ] || missing+=("k8s.io/kubernetes/cmd/$b")
  done
  # One go build for all of them: the packages they share are compiled
  # once and both cores stay busy to the end (each link runs beside other
  # work, not after it).
  if [ ${#missing[@]} -gt 0 ]; then
    log "building ${missing[*]##*/} ${v} (many minutes the first time)"
    (cd "${dir}/src" && go build -trimpath -ldflags "$ldflags" -o "$out/" "${missing[@]}")
  fi
  echo "$v" >"${dir}/tree/kubernetes/version"
  local ctx
  ctx=$(mktemp -d)
  for b in kube-apiserver kube-controller-manager kube-scheduler kube-proxy; do
    cp "$out/$b" "$ctx/$b"
    if [ "$b" = kube-proxy ]; then
      printf 'FROM %s\nCOPY %s /usr/local/bin/%s\nENTRYPOINT ["/usr/local/bin/%s"]\n' "$rootfs" "$b" "$b" "$b" >"$ctx/Dockerfile"
    else
      printf 'FROM scratch\nCOPY %s /usr/local/bin/%s\nENTRYPOINT ["/usr/local/bin/%s"]\n' "$b" "$b" "$b" >"$ctx/Dockerfile"
    fi
    dbuild -t "registry.k8s.io/${b}-amd64:${v}" "$ctx"
    docker save -o "$out/${b}.tar" "registry.k8s.io/${b}-amd64:${v}"
    rm -f "$ctx/$b"
  done
  rm -rf "$ctx"
  tar -C "${dir}/tree" -czf "$tgz" kubernetes
  echo "$tgz"
}

# image_tag LIST NAME: the tag kubeadm names for image NAME.
image_tag() { awk -F: -v n="$2" '$1 ~ "/"n"$" {print $2}' <<<"$1"; }

# offline_images VERSION: etcd, CoreDNS and pause as docker archives, named
# as kubeadm and kind's containerd config name them.
offline_images() {
  local v=$1
  local dir="${cache}/k8s-${v}" list etcd_tag coredns_tag ctx
  local imgs="${dir}/offline-images"
  if [ -f "${imgs}/.done" ]; then echo "$imgs"; return; fi
  mkdir -p "$imgs"
  list=$("${dir}/tree/kubernetes/server/bin/kubeadm" config images list --kubernetes-version "$v" 2>/dev/null)
  etcd_tag=$(image_tag "$list" etcd)
  coredns_tag=$(image_tag "$list" coredns)
  [ -n "$etcd_tag" ] && [ -n "$coredns_tag" ] || die "kubeadm ${v} named no etcd or CoreDNS image: ${list}"
  ctx=$(mktemp -d)
  log "building etcd v${etcd_tag%-*} and CoreDNS ${coredns_tag} as kubeadm ${v} names them (minutes the first time)"
  # A module per version: etcd's modules move together.
  local mod="${cache}/etcd-src-${etcd_tag}"
  mkdir -p "$mod"
  (cd "$mod" && [ -f go.mod ] || go mod init kvp.local/kind-etcd >/dev/null 2>&1)
  (cd "$mod" && go get "go.etcd.io/etcd/server/v3@v${etcd_tag%-*}" >/dev/null 2>&1 &&
    go build -trimpath -ldflags '-s -w' -o "$ctx/etcd" go.etcd.io/etcd/server/v3) ||
    die "could not build etcd v${etcd_tag%-*} from its Go module"
  # Kept: make setup gives it to envtest too (hack/setup-k8s.sh).
  cp "$ctx/etcd" "${mod}/etcd"
  local cmod="${cache}/coredns-src-${coredns_tag}"
  mkdir -p "$cmod"
  (cd "$cmod" && { [ -f go.mod ] || go mod init kvp.local/kind-coredns >/dev/null 2>&1; } &&
    go get "github.com/coredns/coredns@${coredns_tag}" >/dev/null 2>&1 &&
    go build -trimpath -ldflags '-s -w' -o "$ctx/coredns" github.com/coredns/coredns) ||
    die "could not build CoreDNS ${coredns_tag} from its Go module"
  (cd "${ROOT}/hack/tools/pause" && go build -trimpath -ldflags '-s -w' -o "$ctx/pause" .)
  build_one() { # name tag binary path-in-image
    printf 'FROM scratch\nCOPY %s %s\nENTRYPOINT ["%s"]\n' "$3" "$4" "$4" >"$ctx/Dockerfile"
    dbuild -t "$1:$2" "$ctx"
    docker save -o "${imgs}/$(basename "$1").tar" "$1:$2"
  }
  build_one registry.k8s.io/etcd "$etcd_tag" etcd /usr/local/bin/etcd
  build_one registry.k8s.io/coredns/coredns "$coredns_tag" coredns /coredns
  build_one registry.k8s.io/pause "$KIND_PAUSE_TAG" pause /pause
  rm -rf "$ctx"
  touch "${imgs}/.done"
  echo "$imgs"
}

main() {
  local kind tgz imgs rootfs base node ctx tmp
  command -v docker >/dev/null && docker info >/dev/null 2>&1 || "${ROOT}/hack/setup-docker.sh"
  kind=$(kind_bin)
  tgz=$(k8s_bits "$version")
  imgs=$(offline_images "$version")
  rootfs=$(rootfs_image)
  node="kvp-kind-node:${version}-$(cat "$tgz" "$imgs"/*.tar <(echo "$rootfs") | sha256sum | cut -c1-12)"
  if docker image inspect "$node" >/dev/null 2>&1; then echo "$node"; return; fi
  # The base: the root filesystem with the offline images in /kind.
  ctx=$(mktemp -d)
  cp "$imgs"/*.tar "$ctx/"
  printf 'FROM %s\nCOPY *.tar /kind/offline-images/\n' "$rootfs" >"$ctx/Dockerfile"
  base="kvp-kind-base:${node#kvp-kind-node:}"
  dbuild -t "$base" "$ctx"
  rm -rf "$ctx"
  log "kind build node-image ${node}"
  # kind unpacks the release archive under TMPDIR and leaves it there
  # (1.2 GB a build): give it a directory of its own and remove it.
  tmp=$(mktemp -d)
  TMPDIR="$tmp" PATH="${HERE}/bin:${PATH}" "$kind" build node-image --type file --base-image "$base" --image "$node" "$tgz" >&2
  rm -rf "$tmp"
  docker rmi "$base" >/dev/null
  # Earlier node images of this version are of no further use.
  docker images --format '{{.Repository}}:{{.Tag}}' "kvp-kind-node" | grep -F ":${version}-" | grep -vxF "$node" |
    xargs -r docker rmi >/dev/null 2>&1 || true
  echo "$node"
}

main
