#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs KubeVirt's Plugins e2e (kubevirt/e2e.sh) on a kind cluster of its
# own: created from the same node image as the project's cluster, the
# patched build tagged TAG deployed by its operator (kubevirt/deploy.sh),
# the framework's deploy/ and sidecar injector on top, as on the project's
# cluster. The e2e's Plugins are cluster-wide and its specs serial, so on
# the project's cluster it can only run after everything else; on its own
# cluster it runs beside the rest of the cluster scenario.
#
#   kubevirt/e2e-cluster.sh TAG [kubevirt/e2e.sh flags]
#   kubevirt/e2e-cluster.sh down   delete the cluster
#
# The cluster is named by KVP_E2E_CLUSTER (default kvp-e2e) and left up at
# the end, for a look around; the cluster scenario deletes it. The specs'
# output goes to standard output (kubevirt/e2e.sh's), the rest to standard
# error. The images of the project it needs (hack/images.sh
# plugin-controller) must have been built.
set -euo pipefail
source "$(dirname "$0")/../hack/lib.sh"
[ $# -ge 1 ] || die "usage: kubevirt/e2e-cluster.sh TAG [kubevirt/e2e.sh flags] | down"
export KVP_KIND_CLUSTER="${KVP_E2E_CLUSTER:-kvp-e2e}"
if [ "$1" = down ]; then
  exec "${ROOT}/hack/kind/cluster.sh" down
fi
tag=$1
shift
start=$SECONDS

controller=kubevirt-plugins/plugin-controller:dev
docker image inspect "$controller" >/dev/null 2>&1 ||
  die "${controller} is not built: run hack/images.sh plugin-controller"
# The e2e binary compiles while the cluster is made (a bare machine's
# first compile takes minutes); kubevirt/e2e.sh then only links it again.
"${ROOT}/kubevirt/e2e.sh" --compile >&2 &
compile=$!
"${ROOT}/hack/kind/cluster.sh" up "$controller" >&2
"${ROOT}/kubevirt/deploy.sh" "$tag" >&2
wait "$compile" || die "the e2e binary did not compile (the output above says why)"

eval "$("${ROOT}/hack/kind/cluster.sh" env | grep -E '^(KUBECONFIG|KVP_KUBECTL)=')"
export KUBECONFIG
k() { "$KVP_KUBECTL" --kubeconfig "$KUBECONFIG" "$@"; }
for dir in deploy/ deploy/sidecar-injector; do
  k apply -k "${ROOT}/${dir}" >&2
done
k -n kubevirt rollout status deployment/plugin-controller --timeout=5m >&2
# The webhook answers once the controller has written its CA into the
# configurations and the Service reaches a replica: until then a Plugin
# the e2e creates could be refused for the wrong reason. A Plugin whose
# condition does not compile passes the CRD's schema; only the webhook
# refuses it.
invalid='{"apiVersion":"plugin.kubevirt.io/v1alpha1","kind":"Plugin","metadata":{"name":"e2e-cluster-webhook-probe"},
"spec":{"condition":"vmi.Labels[","launcherHooks":[{"cel":{"hookPoint":"GuestDefinition","expression":"Domain{}"}}]}}'
deadline=$((SECONDS + 180))
# The refusal the cluster scenario waits for too (refusedByWebhook).
refused() { grep -q 'spec.condition' <<<"$1" && grep -q 'Syntax error' <<<"$1"; }
until answer=$(k create --dry-run=server -f - <<<"$invalid" 2>&1; true) && refused "$answer"; do
  [ "$SECONDS" -lt "$deadline" ] || die "the plugin-controller's webhook on ${KVP_KIND_CLUSTER} did not refuse an invalid Plugin within 3 minutes; its last answer: ${answer}"
  sleep 2
done
log "e2e cluster ${KVP_KIND_CLUSTER}: KubeVirt ${tag} and deploy/ ready in $((SECONDS - start))s; the webhook refuses an invalid Plugin"

"${ROOT}/kubevirt/e2e.sh" "$tag" "$@"
