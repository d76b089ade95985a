#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs and starts everything the build, the tests and the demo need, on
# a bare machine: Debian packages, a Docker engine, the kind node image,
# kube-apiserver and etcd for envtest, the libvirtd image, the test guest
# and the Debian bases of KubeVirt's images.
# Idempotent; fast when done.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

# libvirt-dev and pkg-config: the cgo libvirt adapter; protobuf-compiler:
# make generate; debootstrap: the libvirtd image; genisoimage: cloud-init
# ISOs in tests; git: releases and verify.
apt_install libvirt-dev pkg-config protobuf-compiler debootstrap genisoimage git gcc libc6-dev
# The Python sample sidecar (sample-sidecars/python-guestdefinition): its
# stubs (make generate) and its run in make test, on Debian's /usr/bin/python3.
apt_install python3-grpcio python3-protobuf protobuf-compiler-grpc
# promtool, which tests/monitoring runs on the alert rules and their unit
# tests (deploy/monitoring). Only the tool is wanted: on a machine run by
# systemd, the server and node exporter the package starts are stopped.
apt_install prometheus
if [ -d /run/systemd/system ]; then
  systemctl disable --now prometheus.service prometheus-node-exporter.service >/dev/null 2>&1 || true
fi
"${ROOT}/hack/setup-docker.sh"
# The libvirtd image the integration tests run, the test guest (a Debian
# kernel and a busybox initramfs) tests/guest and the VMs boot, and the
# Debian bases of KubeVirt's images (kubevirt/images.sh): debootstrap and
# dpkg, mostly waiting on the mirror and the disk, so made in the
# background while the node image's Kubernetes compiles. Seconds when done.
bg_log=$(mktemp /tmp/kvp-setup.XXXXXX)
trap 'rm -f "$bg_log"' EXIT
(
  "${ROOT}/hack/build-libvirtd-image.sh" >/dev/null &&
    "${ROOT}/hack/build-guest.sh" >/dev/null &&
    "${ROOT}/kubevirt/images.sh" --bases
) >"$bg_log" 2>&1 &
bg_pid=$!
# The kind node image of the real-cluster demo and test (hack/kind), once
# per Kubernetes version: many minutes the first time, seconds after. First:
# envtest takes its kube-apiserver and etcd from it.
"${ROOT}/hack/kind/build-node-image.sh" >/dev/null
"${ROOT}/hack/setup-k8s.sh"
# The code generators, buf and golangci-lint (hack/setup-tools.sh) are
# built by make generate and make verify, which use them: make test does
# not (about 5 minutes on a bare machine).
bg_rc=0
wait "$bg_pid" || bg_rc=$?
cat "$bg_log" >&2
[ "$bg_rc" = 0 ] || die "the libvirtd image, the test guest or KubeVirt's image bases could not be made (see above)"
log "setup complete"
