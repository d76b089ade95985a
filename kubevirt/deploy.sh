#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Deploys KubeVirt on the project's kind cluster (hack/kind/cluster.sh up)
# the way its users do, by its own virt-operator, from the images
# kubevirt/images.sh built, and waits until the KubeVirt CR is Deployed:
#
#   0. puts Multus on the nodes (hack/kind/cluster.sh multus), for VMs
#      with Multus networks;
#   1. loads localhost/kubevirt/<component>:TAG (and the test guest's
#      kernel-boot image, when built) into the nodes where each runs
#      (kv_runs_on): the infrastructure on the control plane, virt-handler,
#      the launcher and the guest on the workers;
#   2. renders the release's operator manifest
#      (manifests/release/kubevirt-operator.yaml.in) with KubeVirt's own
#      tools/manifest-templator, built once from the release's module with
#      the build patches of kubevirt/patches ("Series: build": the
#      templator links pkg/controller, whose VirtualMachineTemplate
#      informer needs modules the Go proxy does not serve), for the local
#      images, with one operator replica; applies it;
#   3. applies kubevirt/manifests/kubevirt-cr.yaml and waits for the CR's
#      Available condition and phase Deployed; on a timeout it names what
#      is not ready and prints the operator's last log lines.
#
# Run again on a cluster that has it, it changes nothing and returns in
# seconds.
#
#   kubevirt/deploy.sh TAG                        deploy, or move to TAG
#   kubevirt/deploy.sh digest-aliases IMAGE...    see kubevirt_digest_aliases
#
# Sourced (`source kubevirt/deploy.sh`), it only defines its functions.
# KVP_KUBEVIRT_TIMEOUT: seconds from applying the operator manifest to
# Deployed (default 900). What comes before it (Multus, loading the images,
# compiling the manifest-templator the first time) is the machine's work,
# not the cluster's, and is not counted.
source "$(dirname "${BASH_SOURCE[0]}")/../hack/lib.sh"
source "${ROOT}/kubevirt/version.sh"

KV_NAMESPACE=kubevirt
KV_REGISTRY=localhost/kubevirt
KV_GUEST_REPO=localhost/kubevirt-plugins/guest-kernel
KV_COMPONENTS=(virt-operator virt-api virt-controller virt-exportproxy virt-handler virt-launcher)

# kv_cluster sets KUBECONFIG, KVP_KUBECTL, KVP_KIND and KVP_KIND_CLUSTER
# from hack/kind/cluster.sh and checks that the cluster is up.
kv_cluster() {
  local line
  while IFS= read -r line; do
    export "${line?}"
  done < <("${ROOT}/hack/kind/cluster.sh" env)
  if [ ! -x "$KVP_KIND" ] || [ ! -x "$KVP_KUBECTL" ]; then
    die "kind or kubectl is not built: run hack/kind/cluster.sh up"
  fi
  # kind runs `docker exec --privileged` in the nodes, which this machine
  # refuses; hack/kind/bin/docker drops the flag, as for cluster.sh.
  [[ ":${PATH}:" == *":${ROOT}/hack/kind/bin:"* ]] || export PATH="${ROOT}/hack/kind/bin:${PATH}"
  grep -qx -- "$KVP_KIND_CLUSTER" <<<"$("$KVP_KIND" get clusters 2>/dev/null)" ||
    die "the kind cluster ${KVP_KIND_CLUSTER} is not up: run hack/kind/cluster.sh up"
}

kv_kubectl() { "$KVP_KUBECTL" --kubeconfig "$KUBECONFIG" "$@"; }

# kubevirt_digest_aliases IMAGE...: on every node, names each IMAGE
# (repo:tag, loaded with kind) also <repo>@<its digest>. A migration
# target's Pod asks for containerDisk and kernel-boot images by the digest
# the source's kubelet reported (KubeVirt pins them so both sides run the
# same bytes); an image loaded with kind has no such name and no registry
# can supply it, so without the alias the target fails with ErrImagePull.
# Needs kv_cluster first. Run it again after loading a new build.
kubevirt_digest_aliases() {
  local node img repo digest
  for node in $("$KVP_KIND" get nodes --name "$KVP_KIND_CLUSTER"); do
    for img in "$@"; do
      kv_runs_on "$img" "$node" || continue
      repo=$img
      [[ "${img##*/}" != *:* ]] || repo=${img%:*}
      digest=$(docker exec "$node" ctr -n k8s.io images ls "name==${img}" | awk 'NR > 1 {print $3; exit}')
      [ -n "$digest" ] || die "${img} is not on node ${node}: load it first (kind load docker-image)"
      docker exec "$node" ctr -n k8s.io images tag --force "$img" "${repo}@${digest}" >/dev/null ||
        die "could not name ${img} ${repo}@${digest} on ${node}"
    done
  done
}

# kv_nodes_without IMAGE LISTS prints the nodes that do not have the local
# IMAGE: its name pointing at the same image as its ID (containerd's CRI
# names each image also by its config digest, Docker's image ID) in
# LISTS/<node>, the node's `ctr images ls`.
kv_nodes_without() {
  local img=$1 lists=$2 id f
  id=$(docker image inspect --format '{{.Id}}' "$img")
  for f in "$lists"/*; do
    awk -v ref="$img" -v id="$id" '$1 == ref {t = $3} $1 == id {i = $3} END {exit !(t != "" && t == i)}' "$f" ||
      basename "$f"
  done
}

# kv_runs_on IMAGE NODE: whether IMAGE has a use on NODE. KubeVirt's
# infrastructure (virt-operator, virt-api, virt-controller,
# virt-exportproxy) requires control-plane nodes; virt-handler, the
# launcher and the guests' images run on the others. Loading each image
# only where it runs halves what is copied into the nodes.
kv_runs_on() {
  local img=$1 node=$2 infra=1 cp=1
  case "${img##*/}" in
    virt-operator:* | virt-api:* | virt-controller:* | virt-exportproxy:*) ;;
    *) infra=0 ;;
  esac
  kv_kubectl get node "$node" -o jsonpath='{.metadata.labels}' | grep -q '"node-role.kubernetes.io/control-plane"' || cp=0
  [ "$infra" = "$cp" ]
}

# kv_build_patches prints the patches of kubevirt/patches that belong to
# the build series (the ones a pristine build applies).
kv_build_patches() {
  local p
  for p in "${ROOT}"/kubevirt/patches/*.patch; do
    [ -f "$p" ] && grep -q '^Series: build$' "$p" && printf '%s\n' "$p"
  done
  return 0
}

# kv_templator WORK: prints a directory holding KubeVirt's
# tools/manifest-templator and the release's manifests/ and logo (the
# templator reads it), built once per release and build series.
kv_templator() {
  local work=$1 key dir moddir src p m
  key=$( { echo "${KUBEVIRT_VERSION} $(go env GOVERSION)"; kv_build_patches | xargs -r cat; declare -f kv_templator; } |
    sha256sum | cut -c1-16)
  dir="${BIN}/kubevirt/manifest-templator-${key}"
  # Two deployments on two clusters (the e2e's beside the scenario's) may
  # both find it missing: one builds it, the other waits and uses it. The
  # lock lasts as long as the subshell kv_templator runs in.
  hold_lock "${dir}.lock" "another kubevirt/deploy.sh building the manifest-templator"
  if [ -x "${dir}/manifest-templator" ]; then echo "$dir"; return; fi
  log "building KubeVirt ${KUBEVIRT_VERSION}'s tools/manifest-templator (minutes the first time)"
  mkdir -p "${work}/fetch"
  (cd "${work}/fetch" && go mod init kvp.local/fetch >/dev/null 2>&1 &&
    GOFLAGS=-mod=mod go mod download -json "kubevirt.io/kubevirt@${KUBEVIRT_VERSION}") >"${work}/module.json" ||
    die "the Go module proxy gave no kubevirt.io/kubevirt@${KUBEVIRT_VERSION}"
  moddir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' "${work}/module.json")
  [ -d "$moddir" ] || die "no source directory for kubevirt.io/kubevirt@${KUBEVIRT_VERSION}"
  src="${work}/src"
  cp -r "$moddir" "$src"
  chmod -R u+w "$src"
  rm -f "${src}/go.work" "${src}/go.work.sum"
  (
    cd "$src"
    # The flags, build tags and module graph of KubeVirt's pristine build
    # (kubevirt/build.sh with KVP_KUBEVIRT_PRISTINE=1), so that the packages
    # it compiled are taken from Go's build cache.
    export "${KUBEVIRT_GO_ENV[@]}"
    # As kubevirt/build.sh does: the released api and client-go modules
    # instead of ./staging, which a module zip leaves out.
    go mod edit -replace "kubevirt.io/api=kubevirt.io/api@${KUBEVIRT_VERSION}" \
      -replace "kubevirt.io/client-go=kubevirt.io/client-go@${KUBEVIRT_VERSION}"
    for m in "${UNSERVED_MODULES[@]}"; do go mod edit -droprequire "$m"; done
    for p in $(kv_build_patches); do
      patch -p1 -s --no-backup-if-mismatch <"$p" || die "$(basename "$p") does not apply to ${KUBEVIRT_VERSION}"
    done
    go build -tags selinux -o "${dir}.partial/manifest-templator" ./tools/manifest-templator
  ) >"${work}/templator.log" 2>&1 || { tail -20 "${work}/templator.log" >&2; die "building tools/manifest-templator failed"; }
  cp -r "${src}/manifests" "${dir}.partial/manifests"
  install -D -m 0644 "${src}/assets/kubevirt_logo.png" "${dir}.partial/assets/kubevirt_logo.png"
  rm -rf "$dir"
  mv "${dir}.partial" "$dir"
  # Templators of earlier build series are of no more use.
  find "${BIN}/kubevirt" -maxdepth 1 -name 'manifest-templator-*' ! -name "${dir##*/}" ! -name "${dir##*/}.lock" -exec rm -rf {} +
  echo "$dir"
}

# kv_render TAG WORK OUT: the operator manifest for the local images at
# TAG, with one virt-operator (the release has two; the machine has two
# cores), written to OUT.
kv_render() {
  local tag=$1 work=$2 out=$3 tdir
  tdir=$(kv_templator "$work")
  "${tdir}/manifest-templator" --process-files --generated-manifests-dir="${tdir}/manifests/generated/" \
    --input-file="${tdir}/manifests/release/kubevirt-operator.yaml.in" >"${work}/operator.yaml.in" ||
    die "manifest-templator --process-files failed"
  "${tdir}/manifest-templator" --process-vars --input-file="${work}/operator.yaml.in" \
    --namespace="$KV_NAMESPACE" --container-prefix="$KV_REGISTRY" --container-tag="$tag" \
    --image-pull-policy=IfNotPresent --verbosity=2 --hypervisor=kvm \
    --kubevirt-logo-path="${tdir}/assets/kubevirt_logo.png" >"${work}/operator.yaml" ||
    die "manifest-templator --process-vars failed"
  awk '/^---/ {dep = 0} /^kind: Deployment$/ {dep = 1} dep && /^  replicas: [0-9]+$/ {sub(/[0-9]+$/, "1")} {print}' \
    "${work}/operator.yaml" >"$out"
  [ "$(awk '/^kind: Deployment$/ {dep = 1} dep && /^  replicas:/ {print $2; exit}' "$out")" = 1 ] ||
    die "the rendered operator manifest has no virt-operator Deployment to set one replica on"
  grep -q "image: ${KV_REGISTRY}/virt-operator:${tag}$" "$out" ||
    die "the rendered operator manifest does not name ${KV_REGISTRY}/virt-operator:${tag}"
}

# kv_not_ready prints, one a line, the KubeVirt workloads and Pods that
# are not ready.
kv_not_ready() {
  kv_kubectl -n "$KV_NAMESPACE" get deployments -o \
    jsonpath='{range .items[*]}{"deployment/"}{.metadata.name}{" "}{.status.readyReplicas}{" "}{.spec.replicas}{"\n"}{end}' 2>/dev/null |
    awk '($2 + 0) < $3 {printf "%s (%d/%d ready)\n", $1, $2, $3}'
  kv_kubectl -n "$KV_NAMESPACE" get daemonsets -o \
    jsonpath='{range .items[*]}{"daemonset/"}{.metadata.name}{" "}{.status.numberReady}{" "}{.status.desiredNumberScheduled}{"\n"}{end}' 2>/dev/null |
    awk '($2 + 0) < $3 || $3 == 0 {printf "%s (%d/%d ready)\n", $1, $2, $3}'
  kv_kubectl -n "$KV_NAMESPACE" get pods -o jsonpath='{range .items[*]}{"pod/"}{.metadata.name}{" "}{.spec.nodeName}{" "}{.status.phase}{" "}{range .status.containerStatuses[*]}{.ready}{","}{end}{" "}{range .status.initContainerStatuses[*]}{.state.waiting.reason}{" "}{end}{range .status.containerStatuses[*]}{.state.waiting.reason}{" "}{end}{"\n"}{end}' 2>/dev/null |
    awk '$3 != "Succeeded" && ($3 != "Running" || $4 ~ /false/ || $4 == "") {
      why = ""; for (i = 5; i <= NF; i++) why = why " " $i
      printf "%s on %s: %s%s\n", $1, ($2 == "" ? "no node" : $2), $3, why}'
}

# kv_diagnose prints what tells why KubeVirt is not Deployed.
kv_diagnose() {
  {
    echo "--- KubeVirt CR"
    kv_kubectl -n "$KV_NAMESPACE" get kubevirts.kubevirt.io kubevirt -o \
      jsonpath='phase: {.status.phase}{"\n"}{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}' 2>&1 || true
    echo "--- not ready"
    kv_not_ready
    echo "--- virt-operator's last log lines"
    kv_kubectl -n "$KV_NAMESPACE" logs deployment/virt-operator --tail=40 2>&1 || true
    echo "--- last events in ${KV_NAMESPACE}"
    kv_kubectl -n "$KV_NAMESPACE" get events --sort-by=.lastTimestamp 2>&1 | tail -20 || true
  } >&2
}

# kv_cr_state TAG prints the CR's state in a few words, "Deployed" when
# it is Available and Deployed at TAG and has seen its latest spec.
kv_cr_state() {
  local tag=$1 state phase avail registry version observed gen want
  state=$(kv_kubectl -n "$KV_NAMESPACE" get kubevirts.kubevirt.io kubevirt -o jsonpath='{.status.phase}|{.status.conditions[?(@.type=="Available")].status}|{.status.observedKubeVirtRegistry}|{.status.observedKubeVirtVersion}|{.status.observedGeneration}|{.metadata.generation}' 2>/dev/null || true)
  IFS='|' read -r phase avail registry version gen want <<<"$state"
  observed="${registry}:${version}"
  [ "$observed" != : ] || observed="no version yet"
  if [ "$phase" = Deployed ] && [ "$avail" = True ] && [ "$observed" = "${KV_REGISTRY}:${tag}" ] && [ "$gen" = "$want" ]; then
    echo Deployed
  else
    echo "phase ${phase:-none}, Available ${avail:-unknown}, at ${observed}"
  fi
}

# kv_wait_deployed TAG DEADLINE: waits (watching, not sleeping) until the
# CR is Deployed at TAG and every KubeVirt Pod is ready, saying what is
# not as it changes; fails with a diagnosis at DEADLINE (in $SECONDS).
kv_wait_deployed() {
  local tag=$1 deadline=$2 left shown="" now cr waited
  while :; do
    cr=$(kv_cr_state "$tag")
    now=$(kv_not_ready | awk '{print $1}' | paste -sd' ' -)
    [ "$cr" = Deployed ] && [ -z "$now" ] && return 0
    now="${cr}; not ready: ${now:-nothing reported yet}"
    [ "$now" = "$shown" ] || log "KubeVirt: ${now}"
    shown=$now
    left=$((deadline - SECONDS))
    if [ "$left" -le 0 ]; then
      kv_diagnose
      die "KubeVirt is not Deployed after ${KVP_KUBEVIRT_TIMEOUT:-900}s (${now}); see the operator's log and the events above"
    fi
    # Either returns as soon as what is awaited holds; else the loop looks
    # again within 20s to report progress.
    left=$((left < 20 ? left : 20))
    waited=$SECONDS
    if [ "$cr" = Deployed ]; then
      kv_kubectl -n "$KV_NAMESPACE" wait pods --all --for=condition=Ready --timeout="${left}s" >/dev/null 2>&1 || true
    else
      kv_kubectl -n "$KV_NAMESPACE" wait kubevirts.kubevirt.io/kubevirt --for=jsonpath='{.status.phase}'=Deployed \
        --timeout="${left}s" >/dev/null 2>&1 || true
    fi
    # A watch that ends at once (a Pod went away under it) is not retried
    # at once.
    [ "$SECONDS" -gt "$waited" ] || sleep 1
  done
}

# kv_restart_users IMAGE: deletes the KubeVirt Pods that run IMAGE (a
# rebuilt image under the same tag: the operator sees no change), so
# that their controllers start them again on the new one. Running VMIs
# keep their virt-launcher; new ones get the new image.
kv_restart_users() {
  local img=$1 pods
  mapfile -t pods < <(kv_kubectl -n "$KV_NAMESPACE" get pods -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.containers[*].image}{" "}{.spec.initContainers[*].image}{"\n"}{end}' |
    awk -v img="$img" '{for (i = 2; i <= NF; i++) if ($i == img) {print $1; break}}')
  [ ${#pods[@]} -gt 0 ] || return 0
  log "restarting ${pods[*]} on the new ${img}"
  kv_kubectl -n "$KV_NAMESPACE" delete pod --wait=false "${pods[@]}" >/dev/null
}

# kv_deploy TAG: the whole deployment (see the top of this file).
kv_deploy() {
  local tag=$1 start=$SECONDS t deadline imgs=() missing=() c work load_log
  [[ "$tag" =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || die "TAG ${tag} is not a valid image tag"
  command -v go >/dev/null || die "go is not installed: run make setup"
  kv_cluster
  # One deployment at a time on a cluster: two would set the CR to their
  # tags in turn.
  hold_lock "${BIN}/kubevirt/deploy-${KVP_KIND_CLUSTER}.lock" "another kubevirt/deploy.sh deploying on ${KVP_KIND_CLUSTER} to finish"
  for c in "${KV_COMPONENTS[@]}"; do
    imgs+=("${KV_REGISTRY}/${c}:${tag}")
    docker image inspect "${KV_REGISTRY}/${c}:${tag}" >/dev/null 2>&1 || missing+=("${KV_REGISTRY}/${c}:${tag}")
  done
  [ ${#missing[@]} -eq 0 ] || die "not built: ${missing[*]}; run kubevirt/images.sh BINDIR ETCDIR ${tag}"
  local guest="${KV_GUEST_REPO}:${tag}"
  if docker image inspect "$guest" >/dev/null 2>&1; then imgs+=("$guest"); else guest=""; fi
  work=$(mktemp -d /var/tmp/kvp-kubevirt-deploy.XXXXXX)
  # shellcheck disable=SC2064 # the directory is known now
  trap "rm -rf '${work}'" EXIT

  # A VM's Multus networks (multus: in its networks) need Multus on the
  # nodes, in front of their bridge.
  "${ROOT}/hack/kind/cluster.sh" multus

  t=$SECONDS
  log "loading ${#imgs[@]} images into the nodes of ${KVP_KIND_CLUSTER} (those a node has already are skipped)"
  load_log="${work}/load.log"
  # One image at a time, and only to the nodes that lack it: kind's own
  # check asks crictl, which the nodes do not have, so it would load every
  # image everywhere each time (and, given several, all of them).
  local img nodes node
  mkdir -p "${work}/images"
  for node in $("$KVP_KIND" get nodes --name "$KVP_KIND_CLUSTER"); do
    docker exec "$node" ctr -n k8s.io images ls >"${work}/images/${node}" 2>/dev/null || : >"${work}/images/${node}"
  done
  for img in "${imgs[@]}"; do
    nodes=$(kv_nodes_without "$img" "${work}/images" | while read -r node; do
      if kv_runs_on "$img" "$node"; then echo "$node"; fi
    done | paste -sd, -)
    [ -n "$nodes" ] || continue
    "$KVP_KIND" load docker-image --name "$KVP_KIND_CLUSTER" --nodes "$nodes" "$img" >"$load_log" 2>&1 ||
      { cat "$load_log" >&2; die "kind load docker-image ${img} failed"; }
    log "loaded ${img} into ${nodes}"
    kv_restart_users "$img"
  done
  [ -z "$guest" ] || kubevirt_digest_aliases "$guest"
  local t_load=$((SECONDS - t))

  t=$SECONDS
  # One per cluster: two clusters may be deployed at once.
  local manifest="${BIN}/kubevirt/kubevirt-operator-${KVP_KIND_CLUSTER}.yaml"
  kv_render "$tag" "$work" "$manifest"
  # On a bare machine busy with other builds the steps above took 14
  # minutes once and left the operator 60 s of a deadline counted from the
  # start; it counts from here.
  deadline=$((SECONDS + ${KVP_KUBEVIRT_TIMEOUT:-900}))
  log "applying ${manifest#"${ROOT}"/}"
  # Server-side: the KubeVirt CRD is too large for the last-applied
  # annotation of a client-side apply.
  kv_kubectl apply --server-side --force-conflicts --field-manager=kvp-kubevirt-deploy -f "$manifest" >"${work}/apply.log" 2>&1 ||
    { cat "${work}/apply.log" >&2; die "applying the operator manifest failed"; }
  kv_kubectl wait --for=condition=Established crd/kubevirts.kubevirt.io --timeout=60s >/dev/null ||
    die "the KubeVirt CRD is not Established"
  if ! kv_kubectl -n "$KV_NAMESPACE" rollout status deployment/virt-operator \
    --timeout="$((deadline - SECONDS > 0 ? deadline - SECONDS : 1))s" >/dev/null 2>&1; then
    kv_diagnose
    die "virt-operator is not ready (see above)"
  fi
  local t_operator=$((SECONDS - t))

  t=$SECONDS
  log "applying the KubeVirt CR (kubevirt/manifests/kubevirt-cr.yaml, ${KV_REGISTRY}:${tag})"
  sed -e "s|@IMAGE_REGISTRY@|${KV_REGISTRY}|" -e "s|@IMAGE_TAG@|${tag}|" "${ROOT}/kubevirt/manifests/kubevirt-cr.yaml" \
    >"${work}/kubevirt-cr.yaml"
  # virt-operator's webhook validates the CR. Right after the operator's
  # rollout its Service may not reach a serving Pod yet (seen once, on a
  # loaded machine during the upgrade: "failed calling webhook ... context
  # deadline exceeded"): that refusal is retried until the deadline, any
  # other fails at once.
  until kv_kubectl apply -f "${work}/kubevirt-cr.yaml" >"${work}/cr.log" 2>&1; do
    if ! grep -q 'failed calling webhook' "${work}/cr.log" || [ "$SECONDS" -ge "$deadline" ]; then
      cat "${work}/cr.log" >&2
      die "applying the KubeVirt CR failed"
    fi
    log "virt-operator's webhook did not answer the CR, applying it again: $(tail -1 "${work}/cr.log")"
    sleep 5
  done
  kv_wait_deployed "$tag" "$deadline"
  local t_cr=$((SECONDS - t))
  kv_kubectl -n "$KV_NAMESPACE" get deployments,daemonsets >&2
  log "KubeVirt ${KUBEVIRT_VERSION} (images ${KV_REGISTRY}/*:${tag}) Deployed in $((SECONDS - start))s: images loaded in ${t_load}s, operator ready in ${t_operator}s, CR Deployed in ${t_cr}s"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  case "${1:-}" in
    digest-aliases)
      shift
      [ $# -gt 0 ] || die "usage: kubevirt/deploy.sh digest-aliases IMAGE..."
      kv_cluster
      kubevirt_digest_aliases "$@"
      ;;
    "" | -h | --help) die "usage: kubevirt/deploy.sh TAG | digest-aliases IMAGE..." ;;
    *) kv_deploy "$1" ;;
  esac
fi
