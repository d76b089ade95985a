#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Starts libvirtd the way the tests need it inside an unprivileged container:
# virtlogd in the background, libvirtd in the foreground, listening on TCP.
set -e
mkdir -p /var/log/libvirt /var/run/libvirt /var/lib/libvirt/qemu
virtlogd -d
exec libvirtd --listen
