#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The local kind cluster the real-cluster demo and tests run on: three
# nodes (a control plane and two workers) from the node image
# build-node-image.sh makes here, with nothing fetched from a registry.
#
#   hack/kind/cluster.sh up [IMAGE...]  (re)create the cluster, load IMAGEs
#   hack/kind/cluster.sh load IMAGE...  load local images into the workers
#   hack/kind/cluster.sh multus         add Multus (secondary networks) to it
#   hack/kind/cluster.sh multus-bin     build Multus's plugin only (cached)
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
  # Every node's kubelet, containerd and KubeVirt's virt-handler each take
  # inotify instances from the host's one per-user limit; 128, a common
  # default, runs out with two clusters up (virt-handler: "Failed to create
  # an inotify watcher: too many open files").
  if [ "$(cat /proc/sys/fs/inotify/max_user_instances 2>/dev/null || echo 1024)" -lt 1024 ]; then
    sysctl -qw fs.inotify.max_user_instances=1024 2>/dev/null ||
      log "fs.inotify.max_user_instances is below 1024 and cannot be raised here: a second cluster may run out"
  fi
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

# multus_bin: Multus's thin plugin, built once from its Go module.
multus_bin() {
  local dir="${cache}/multus-${MULTUS_VERSION}" pkg=gopkg.in/k8snetworkplumbingwg/multus-cni.v4/cmd/multus
  hold_lock "${cache}/.multus.lock" "another build of Multus to finish"
  if [ ! -x "${dir}/multus" ]; then
    log "building Multus ${MULTUS_VERSION} (a few minutes the first time)" >&2
    mkdir -p "${dir}/src"
    (
      cd "${dir}/src"
      export GOWORK=off GOFLAGS=-buildvcs=false CGO_ENABLED=0
      [ -f go.mod ] || go mod init kvp.local/multus >/dev/null 2>&1
      go get "${pkg}@${MULTUS_VERSION}" >get.log 2>&1 || { tail -5 get.log >&2; exit 1; }
      go build -trimpath -ldflags '-s -w' -o "${dir}/multus" "$pkg"
    ) || die "could not build Multus ${MULTUS_VERSION} from its Go module"
  fi
  echo "${dir}/multus"
}

# multus installs Multus's thin plugin in front of each node's bridge: a
# Pod that names NetworkAttachmentDefinitions in its
# k8s.v1.cni.cncf.io/networks annotation gets those interfaces besides its
# own (KubeVirt's Multus networks); every other Pod is served by the bridge
# as before. Idempotent.
multus() {
  local bin token ca server n conf
  bin=$(multus_bin)
  # Twice: the definition in it needs the CRD in it established first.
  k apply -f "${HERE}/multus.yaml" >/dev/null 2>&1 || true
  k wait --for=condition=Established crd/network-attachment-definitions.k8s.cni.cncf.io --timeout=60s >/dev/null
  k apply -f "${HERE}/multus.yaml" >/dev/null
  for _ in $(seq 1 30); do
    token=$(k -n kube-system get secret multus-token -o jsonpath='{.data.token}' 2>/dev/null | base64 -d)
    [ -n "$token" ] && break
    sleep 1
  done
  [ -n "$token" ] || die "the token of ServiceAccount kube-system/multus was not issued"
  ca=$(k -n kube-system get secret multus-token -o jsonpath='{.data.ca\.crt}')
  server="https://${name}-control-plane:6443"
  conf='{"cniVersion": "0.4.0", "name": "multus-cni-network", "type": "multus",
  "kubeconfig": "/etc/cni/net.d/multus.d/multus.kubeconfig",
  "clusterNetwork": "kvp-bridge",
  "confDir": "/etc/cni/net.d", "binDir": "/opt/cni/bin",
  "logFile": "/var/log/multus.log", "logLevel": "verbose"}'
  for n in $(nodes); do
    docker cp "$bin" "${n}:/opt/cni/bin/multus.new" >/dev/null
    docker exec "$n" mv /opt/cni/bin/multus.new /opt/cni/bin/multus
    docker exec -i "$n" sh -c 'mkdir -p /etc/cni/net.d/multus.d && umask 077 && cat > /etc/cni/net.d/multus.d/multus.kubeconfig' <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "${server}", certificate-authority-data: "${ca}"}
users:
- name: multus
  user: {token: "${token}"}
contexts:
- name: multus
  context: {cluster: local, user: multus}
current-context: multus
EOF
    # containerd serves a Pod with the first configuration by file name.
    printf '%s\n' "$conf" | docker exec -i "$n" sh -c 'cat > /etc/cni/net.d/00-multus.conf.tmp && mv /etc/cni/net.d/00-multus.conf.tmp /etc/cni/net.d/00-multus.conf'
  done
  log "Multus ${MULTUS_VERSION} in front of the bridge on $(nodes | paste -sd' ' -)"
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
  multus) multus ;;
  multus-bin) multus_bin >/dev/null ;;
  down) "$kind" delete cluster --name "$name" ;;
  env)
    echo "KUBECONFIG=${kubeconfig}"
    echo "KVP_KUBECTL=${kubectl}"
    echo "KVP_KIND=${kind}"
    echo "KVP_KIND_CLUSTER=${name}"
    echo "KVP_KIND_K8S_VERSION=${KIND_K8S_VERSION}"
    ;;
  *) die "usage: $0 up [IMAGE...] | load IMAGE... | multus | multus-bin | down | env" ;;
esac
