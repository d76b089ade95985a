#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Put first on PATH while kind runs (hack/kind/cluster.sh does). kind starts
# its node containers with `docker run --privileged`, which fails on machines
# whose capability bounding set lacks CAP_SYS_RESOURCE ("unable to apply
# caps"). For run and create this asks for every other capability and the
# device access a node needs instead; for exec the flag is dropped, as the
# exec'd process gets the container's capabilities anyway. Everything else is
# passed to the real docker unchanged.
#
# The nodes also get the host's /dev/net/tun: KubeVirt's virt-handler offers
# it to launcher Pods (devices.kubevirt.io/tun), which make the VM's tap
# device with it, and a privileged Pod sees the node's /dev as it was when
# the node started. /dev/kvm only with KVP_KIND_KVM=1: where it exists,
# virt-launcher uses KVM even with useEmulation, and KVM guests do not boot
# on every host (kubevirt/manifests/kubevirt-cr.yaml: TCG runs the guests).
set -euo pipefail
real="${KVP_REAL_DOCKER:-/usr/bin/docker}"
sub=""
args=()
for a in "$@"; do
  if [ -z "$sub" ] && [[ "$a" != -* ]]; then sub="$a"; fi
  if [ "$a" != "--privileged" ]; then
    args+=("$a")
    continue
  fi
  case "$sub" in
    run|create)
      args+=(--cap-add ALL --cap-drop SYS_RESOURCE
        --security-opt seccomp=unconfined --security-opt apparmor=unconfined
        --security-opt systempaths=unconfined
        --device-cgroup-rule 'a *:* rwm' --device /dev/kmsg --device /dev/fuse)
      if [ -c /dev/net/tun ]; then args+=(--device /dev/net/tun); fi
      if [ "${KVP_KIND_KVM:-0}" = 1 ] && [ -c /dev/kvm ]; then args+=(--device /dev/kvm); fi
      ;;
  esac
done
exec "$real" "${args[@]}"
