#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Makes sure a Docker engine answers on this machine: installs docker.io when
# dockerd is missing and starts it in the background when it is not running.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

if docker info >/dev/null 2>&1; then
  exit 0
fi
if ! command -v dockerd >/dev/null 2>&1; then
  apt_install docker.io
fi
log "starting dockerd (log: /var/log/dockerd.log)"
setsid dockerd >/var/log/dockerd.log 2>&1 < /dev/null &
for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then
    log "dockerd is up"
    exit 0
  fi
  sleep 1
done
die "dockerd did not answer within 60s; see /var/log/dockerd.log"
