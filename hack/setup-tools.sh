#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the pinned tools into bin/: the code generators (hack/tools/gen),
# buf (hack/tools/buf) and golangci-lint (hack/tools/lint), each named by
# the tool directives of its module. A tool is rebuilt when its module's
# go.mod changed since it was built (bin/.<tool>.mod keeps a hash of it).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

build() { # build MODULE-DIR PACKAGE
  local name stamp sum
  name=$(basename "$2")
  stamp="${BIN}/.${name}.mod"
  sum=$(sha256sum "${ROOT}/hack/tools/$1/go.mod" | cut -d' ' -f1)
  [ -x "${BIN}/${name}" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$sum" ] && return 0
  log "building ${name}"
  (cd "${ROOT}/hack/tools/$1" && GOWORK=off go build -o "${BIN}/${name}" "$2")
  printf '%s\n' "$sum" >"$stamp"
}

build gen sigs.k8s.io/controller-tools/cmd/controller-gen
build gen google.golang.org/protobuf/cmd/protoc-gen-go
build gen google.golang.org/grpc/cmd/protoc-gen-go-grpc
build buf github.com/bufbuild/buf/cmd/buf
build lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint
