#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Prometheus image the cluster scenario scrapes the components
# with, without pulling anything: Debian's own prometheus binary (the
# package make setup installs for promtool) and the C library it links,
# on `scratch`, run as nobody. Prints the image name; the tag is a hash of
# the binary and this script, so a cached image is reused until either
# changes.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

apt_install prometheus
bin=/usr/bin/prometheus
tag=$(cat "$0" "$bin" | sha256sum | cut -c1-12)
image="kvp-prometheus:${tag}"
if docker image inspect "$image" >/dev/null 2>&1; then
  echo "$image"
  exit 0
fi
ctx=$(mktemp -d /tmp/kvp-prometheus.XXXXXX)
trap 'rm -rf "$ctx"' EXIT
mkdir -p "${ctx}/root/usr/bin" "${ctx}/root/etc" "${ctx}/root/prometheus"
cp "$bin" "${ctx}/root/usr/bin/prometheus"
# The binary's shared libraries (the C library and the loader), at the
# paths the binary names.
for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
  mkdir -p "${ctx}/root$(dirname "$lib")"
  cp -L "$lib" "${ctx}/root${lib}"
done
echo 'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin' >"${ctx}/root/etc/passwd"
echo 'nogroup:x:65534:' >"${ctx}/root/etc/group"
chown 65534:65534 "${ctx}/root/prometheus"
cat >"${ctx}/Dockerfile" <<'EOF'
FROM scratch
COPY root/ /
USER 65534:65534
WORKDIR /prometheus
ENTRYPOINT ["/usr/bin/prometheus"]
EOF
log "building ${image} from $(dpkg-query -W -f '${Package} ${Version}' prometheus)"
out=$(DOCKER_BUILDKIT=0 docker build -q -t "$image" "$ctx" 2>&1) ||
  { printf '%s\n' "$out" >&2; die "docker build of ${image} failed"; }
echo "$image"
