#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds one image per component with the local Docker engine, without
# pulling anything: plugin-controller, label-syncer and every
# sample-sidecars/<name>/ that has a Dockerfile. Each image holds one static
# binary (CGO_ENABLED=0) on top of `scratch`, run by a USER its Dockerfile
# names, never root: 65532 for the controllers and node-hook-recorder (whose
# DaemonSet asks for root, as its host directories belong to root), 107 (the
# launcher's user) for the launcher sidecars.
#
#   hack/images.sh                 build every image
#   hack/images.sh NAME...         build only these components
#   hack/images.sh --list          print the component names
#
# Every image is tagged kubevirt-plugins/<name>:dev and kvp-<name>:latest
# (the name the sample manifests and injection policies reference). Python
# samples (sample-sidecars/<name>/sidecar.py) are built by
# hack/build-python-image.sh on a debootstrapped python3-grpcio base. An
# image whose inputs (binary and Dockerfile) did not change is not rebuilt:
# the image carries their hash as a label.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
# One build at a time: make test runs the cluster scenario beside the
# other integration tests, and both may ask for the same images.
hold_lock "${BIN}/.images.lock" "another hack/images.sh to finish"
cd "$ROOT"

# components prints "name module cmd-package dockerfile" lines; dockerfile
# is "-" when the component has none and a scratch one is generated. Every
# Dockerfile copies bin/<name> from its build context.
components() {
  local c
  for c in plugin-controller label-syncer; do
    if [ -f "${c}/Dockerfile" ]; then
      echo "${c} ${c} ./cmd/${c} ${c}/Dockerfile"
    else
      echo "${c} ${c} ./cmd/${c} -"
    fi
  done
  local d name
  for d in sample-sidecars/*/; do
    name=$(basename "$d")
    [ -f "${d}Dockerfile" ] || continue
    [ -d "${d}cmd/${name}" ] || die "sample-sidecars/${name} has a Dockerfile but no cmd/${name}"
    echo "${name} sample-sidecars ./${name}/cmd/${name} ${d}Dockerfile"
  done
}

# python_samples prints the names of the Python samples.
python_samples() {
  local f
  for f in sample-sidecars/*/sidecar.py; do
    [ -f "$f" ] && basename "$(dirname "$f")"
  done
  return 0
}

if [ "${1:-}" = "--list" ]; then
  components | awk '{print $1}'
  python_samples
  exit 0
fi

command -v docker >/dev/null || die "docker is not installed: run make setup"
docker info >/dev/null 2>&1 || die "the Docker engine does not answer: run make setup"

wanted=("$@")
selected() {
  [ ${#wanted[@]} -eq 0 ] && return 0
  local w
  for w in "${wanted[@]}"; do [ "$w" = "$1" ] && return 0; done
  return 1
}
for w in "${wanted[@]}"; do
  grep -qx -- "$w" <<<"$(components | awk '{print $1}'; python_samples)" || die "unknown component ${w}; known: $({ components | awk '{print $1}'; python_samples; } | tr '\n' ' ')"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/kvp-images.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

# Build flags. grpcnotrace leaves golang.org/x/net/trace (and the
# html/template it imports) out of gRPC: its tracing runs only when
# grpc.EnableTracing is set, which no component does. -s -w drop the symbol
# table and DWARF. The Go samples are also built without inlining outside
# the standard library (-gcflags=all=-l, then std= restores the default
# flags for the standard library), which keeps each one under 16 MB; their
# Dockerfiles and sample-sidecars/README.md give the same flags. The
# controllers keep the default inlining.
go_flags=(-trimpath -tags grpcnotrace '-ldflags=-s -w')
sample_flags=(-gcflags=all=-l -gcflags=std=)

hash_label=io.kubevirt-plugins.inputs
rows=()
while read -r name module pkg dockerfile; do
  selected "$name" || continue
  ctx="${work}/${name}"
  mkdir -p "${ctx}/bin"
  log "building ${name} (${module}/${pkg#./})"
  flags=("${go_flags[@]}")
  if [ "$module" = sample-sidecars ]; then flags+=("${sample_flags[@]}"); fi
  (cd "$module" && CGO_ENABLED=0 go build "${flags[@]}" -o "${ctx}/bin/${name}" "$pkg")
  if [ "$dockerfile" = "-" ]; then
    cat >"${ctx}/Dockerfile" <<EOF
FROM scratch
COPY bin/${name} /${name}
USER 65532:65532
ENTRYPOINT ["/${name}"]
EOF
  else
    cp "$dockerfile" "${ctx}/Dockerfile"
  fi
  inputs=$(cat "${ctx}/bin/${name}" "${ctx}/Dockerfile" | sha256sum | cut -c1-32)
  primary="kubevirt-plugins/${name}:dev"
  alias="kvp-${name}:latest"
  current=$(docker image inspect --format "{{ index .Config.Labels \"${hash_label}\" }}" "$primary" 2>/dev/null || true)
  status=cached
  if [ "$current" != "$inputs" ]; then
    status=built
    # The legacy builder needs nothing but the engine (BuildKit may want
    # to fetch its frontend); its deprecation notice is dropped.
    if ! out=$(DOCKER_BUILDKIT=0 docker build -q --label "${hash_label}=${inputs}" -t "$primary" "$ctx" 2>&1); then
      printf '%s\n' "$out" >&2
      die "docker build of ${name} failed"
    fi
  fi
  docker tag "$primary" "$alias"
  id=$(docker image inspect --format '{{.Id}}' "$primary" | sed 's/^sha256://' | cut -c1-12)
  size=$(docker image inspect --format '{{.Size}}' "$primary" | awk '{printf "%.1fMB", $1/1000000}')
  rows+=("${name}|${primary}|${alias}|${id}|${size}|${status}")
done < <(components)
while read -r name; do
  selected "$name" || continue
  log "building ${name} (Python)"
  primary=$("${ROOT}/hack/build-python-image.sh" "$name")
  id=$(docker image inspect --format '{{.Id}}' "$primary" | sed 's/^sha256://' | cut -c1-12)
  size=$(docker image inspect --format '{{.Size}}' "$primary" | awk '{printf "%.1fMB", $1/1000000}')
  rows+=("${name}|${primary}|kvp-${name}:latest|${id}|${size}|ready")
done < <(python_samples)

printf '%-20s %-42s %-30s %-13s %-8s %s\n' COMPONENT IMAGE ALSO-TAGGED ID SIZE STATUS
for r in "${rows[@]}"; do
  IFS='|' read -r n p a i s st <<<"$r"
  printf '%-20s %-42s %-30s %-13s %-8s %s\n' "$n" "$p" "$a" "$i" "$s" "$st"
done

# Image references in the manifests that no local image satisfies (only
# meaningful after a full build).
[ ${#wanted[@]} -eq 0 ] || exit 0
mismatch=0
while IFS=: read -r file ref; do
  ref=$(echo "$ref" | sed -E 's/^[[:space:]]*image:[[:space:]]*//; s/["'\'',]//g; s/[[:space:]]+$//')
  case "$ref" in
    kubevirt-plugins/*|kvp-*) ;;
    *) continue ;;
  esac
  if ! docker image inspect "$ref" >/dev/null 2>&1; then
    log "warning: ${file} references ${ref}, which is not a local image"
    mismatch=1
  fi
done < <(grep -rHoE --include='*.yaml' 'image:[[:space:]]*"?[^"[:space:],]+' deploy sample-sidecars plugin-controller label-syncer 2>/dev/null || true)
[ "$mismatch" -eq 0 ] || log "some manifests reference images this script does not build (see the warnings above)"
