#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Measures, on the project's kind cluster with KubeVirt deployed
# (kubevirt/deploy.sh), what a user waits for: from `kubectl apply` of a
# VirtualMachine to its VMI in phase Running, as KubeVirt reports it. Each
# round creates the VM, polls the VMI every 100 ms, then deletes the VM
# and waits for its launcher Pod to go, so that rounds do not overlap.
# Prints each round and the median, minimum and maximum per manifest.
#
#   kubevirt/boot-times.sh TAG ROUNDS MANIFEST...
#
# TAG is the image tag the manifests' @IMAGE_TAG@ stands for (the guest's
# kernel-boot image); each MANIFEST holds one VirtualMachine (a
# NetworkAttachmentDefinition beside it is applied once and kept).
source "$(dirname "${BASH_SOURCE[0]}")/deploy.sh"

[ $# -ge 3 ] || die "usage: kubevirt/boot-times.sh TAG ROUNDS MANIFEST..."
tag=$1 rounds=$2
shift 2
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive number, not ${rounds}"
kv_cluster

now_ms() { date +%s%3N; }

# one_round MANIFEST: prints the milliseconds from apply to Running.
one_round() {
  local m=$1 name start phase
  name=$(sed -n '/^kind: VirtualMachine$/,$ {/^  name: /{s/^  name: //p;q}}' "$m")
  [ -n "$name" ] || die "${m}: no VirtualMachine"
  start=$(now_ms)
  sed "s/@IMAGE_TAG@/${tag}/g" "$m" | kv_kubectl apply -f - >/dev/null
  for _ in $(seq 3000); do
    phase=$(kv_kubectl -n default get vmi "$name" -o jsonpath='{.status.phase}' 2>/dev/null || true)
    [ "$phase" = Running ] && break
    sleep 0.1
  done
  [ "$phase" = Running ] || die "VM ${name} from ${m} not Running after 5 minutes (phase ${phase:-none})"
  echo $(( $(now_ms) - start ))
  kv_kubectl -n default delete vm "$name" --wait=true >/dev/null
  kv_kubectl -n default wait --for=delete pod -l "vm.kubevirt.io/name=${name}" --timeout=180s >/dev/null 2>&1 || true
}

for m in "$@"; do
  [ -f "$m" ] || die "${m}: no such manifest"
  times=()
  for i in $(seq "$rounds"); do
    t=$(one_round "$m")
    times+=("$t")
    log "${m##*/} round ${i}: ${t} ms"
  done
  printf '%s\n' "${times[@]}" | sort -n | awk -v m="${m##*/}" '
    { v[NR] = $1 }
    END {
      med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
      printf "%s: %d rounds, creation to Running median %.1f s (%.1f to %.1f)\n", m, NR, med / 1000, v[1] / 1000, v[NR] / 1000
    }'
done
