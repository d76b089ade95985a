#!/usr/bin/env bash
# Builds the pinned code generators (hack/tools/gen) into bin/.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

cd "${ROOT}/hack/tools/gen"
for pkg in sigs.k8s.io/controller-tools/cmd/controller-gen \
  google.golang.org/protobuf/cmd/protoc-gen-go \
  google.golang.org/grpc/cmd/protoc-gen-go-grpc; do
  name=$(basename "$pkg")
  if [ ! -x "${BIN}/${name}" ]; then
    log "building ${name}"
    GOWORK=off go build -o "${BIN}/${name}" "$pkg"
  fi
done
