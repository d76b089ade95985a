#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The local kind cluster the real-cluster demo and tests run on: three
# nodes (a control plane and two workers) from the node image
# build-node-image.sh makes here, with nothing fetched from a registry.
#
#   hack/kind/cluster.sh up [IMAGE...]  (re)create the cluster, load IMAGEs
#   hack/kind/cluster.sh load IMAGE...  load local images into the workers
#   hack/kind/cluster.sh down           delete it
#   hack/kind/cluster.sh env            print KUBECONFIG, KVP_KUBECTL, ...
#
# KVP_KIND_K8S_VERSION picks the Kubernetes version (default: versions.sh).
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
HERE="${ROOT}/hack/kind"
source "${HERE}/versions.sh"

name="${KVP_KIND_CLUSTER:-kvp}"
cache="${BIN}/kind"
kubeconfig="${cache}/kubeconfig-${name}"
kind="${cache}/kind"
kubectl="${cache}/k8s-${KIND_K8S_VERSION}/tree/kubernetes/server/bin/kubectl"
# kind's --privileged goes through the wrapper (docker-wrapper.sh).
export PATH="${HERE}/bin:${PATH}"

k() { "$kubectl" --kubeconfig "$kubeconfig" "$@"; }

nodes() { "$kind" get nodes --name "$name"; }

# network: a bridge with the node's podCIDR on every node, and a route to
# every other node's podCIDR through that node (kind's kindnetd does this
# elsewhere; its image cannot be had here).
network() {
  local n cidr ip others o ocidr oip
  for n in $(nodes); do
    cidr=$(k get node "$n" -o jsonpath='{.spec.podCIDR}')
    [ -n "$cidr" ] || die "node $n has no podCIDR"
    sed "s|POD_CIDR|${cidr}|" "${HERE}/cni.conflist" |
      docker exec -i "$n" sh -c 'mkdir -p /etc/cni/net.d && cat > /etc/cni/net.d/10-kvp-bridge.conflist'
    for o in $(nodes); do
      [ "$o" = "$n" ] && continue
      ocidr=$(k get node "$o" -o jsonpath='{.spec.podCIDR}')
      oip=$(docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$o")
      docker exec "$n" ip route replace "$ocidr" via "$oip"
    done
  done
}

up() {
  local node start
  start=$(date +%s)
  node=$("${HERE}/build-node-image.sh" "$KIND_K8S_VERSION")
  [ -x "$kubectl" ] || die "kubectl ${KIND_K8S_VERSION} was not built (${kubectl})"
  if grep -qx -- "$name" <<<"$("$kind" get clusters 2>/dev/null)"; then
    log "deleting the existing kind cluster ${name}"
    "$kind" delete cluster --name "$name" >/dev/null 2>&1
  fi
  log "creating kind cluster ${name} (Kubernetes ${KIND_K8S_VERSION}, 3 nodes, image ${node})"
  "$kind" create cluster --name "$name" --image "$node" --config "${HERE}/cluster.yaml" \
    --kubeconfig "$kubeconfig" --wait 0s >"${cache}/create-${name}.log" 2>&1 ||
    { tail -30 "${cache}/create-${name}.log" >&2; die "kind create cluster failed (log: ${cache}/create-${name}.log)"; }
  network
  # kind applies a local-path-provisioner for volumes; nothing here asks
  # for one and its image cannot be had, so it goes.
  k delete namespace local-path-storage --ignore-not-found --wait=false >/dev/null
  k delete storageclass standard --ignore-not-found >/dev/null
  k wait --for=condition=Ready nodes --all --timeout=180s >/dev/null
  k -n kube-system rollout status deployment/coredns --timeout=180s >/dev/null
  [ $# -eq 0 ] || load "$@"
  log "kind cluster ${name} is up in $(( $(date +%s) - start ))s (KUBECONFIG=${kubeconfig})"
}

# load puts local images on the workers, where the project's Pods run.
load() {
  local workers
  workers=$(nodes | grep -v control-plane | paste -sd, -)
  "$kind" load docker-image --name "$name" --nodes "$workers" "$@" >/dev/null
}

case "${1:-}" in
  up) shift; up "$@" ;;
  load) shift; load "$@" ;;
  down) "$kind" delete cluster --name "$name" ;;
  env)
    echo "KUBECONFIG=${kubeconfig}"
    echo "KVP_KUBECTL=${kubectl}"
    echo "KVP_KIND=${kind}"
    echo "KVP_KIND_CLUSTER=${name}"
    echo "KVP_KIND_K8S_VERSION=${KIND_K8S_VERSION}"
    ;;
  *) die "usage: $0 up [IMAGE...] | load IMAGE... | down | env" ;;
esac
