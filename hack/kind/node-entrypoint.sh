#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The node container's entrypoint, in front of kind's own (entrypoint.kind).
# Without --privileged (see docker-wrapper.sh) Docker mounts /sys and the
# cgroup hierarchies read-only; kubelet and containerd need to write them.
set -e
mount -o remount,rw /sys
for m in $(findmnt -lun -o target -t cgroup,cgroup2 | grep '^/sys/fs/cgroup'); do
  mount -o remount,bind,rw "$m"
done
mount -o remount,rw /sys/fs/cgroup 2>/dev/null || true
exec /usr/local/bin/entrypoint.kind "$@"
