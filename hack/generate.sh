#!/usr/bin/env bash
# Regenerates every generated file from scratch: deepcopy and the CRD from
# the API types, the hook protos, and whatever module-specific generators
# the Makefile passes as arguments (make targets, run afterwards).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
"${ROOT}/hack/setup-tools.sh"
export PATH="${BIN}:${PATH}"

log "deepcopy and CRD"
rm -f "${ROOT}"/api/plugin/v1alpha1/zz_generated.deepcopy.go "${ROOT}"/deploy/crd/*.yaml
(cd "${ROOT}/api" && GOWORK=off controller-gen object paths=./... \
  && GOWORK=off controller-gen crd:crdVersions=v1 paths=./... output:crd:dir=../deploy/crd)

log "protos"
rm -f "${ROOT}"/protos/hooks/v1alpha1/*.pb.go
command -v protoc >/dev/null || apt_install protobuf-compiler
(cd "${ROOT}/protos" && protoc -I . \
  --go_out=. --go_opt=paths=source_relative \
  --go-grpc_out=. --go-grpc_opt=paths=source_relative \
  hooks/v1alpha1/api.proto)

log "Python stubs for sample-sidecars/python-guestdefinition"
command -v grpc_python_plugin >/dev/null || apt_install protobuf-compiler-grpc
py_out="${ROOT}/sample-sidecars/python-guestdefinition"
rm -rf "${py_out}/hooks"
(cd "${ROOT}/protos" && protoc -I . \
  --python_out="${py_out}" \
  --grpc_out="${py_out}" --plugin=protoc-gen-grpc="$(command -v grpc_python_plugin)" \
  hooks/v1alpha1/api.proto)
