# SPDX-License-Identifier: Apache-2.0
# The KubeVirt release the patch series applies to, and what its build needs.
# Sourced by kubevirt/*.sh.

KUBEVIRT_VERSION=v1.9.0

# Modules the release requires that the Go module proxy serves in no
# version; the build patches compile their code out.
UNSERVED_MODULES=(
  kubevirt.io/virt-template-api
  kubevirt.io/virt-template-client-go
  kubevirt.io/virt-template-engine
  libguestfs.org/libnbd
)

# The framework's modules are linked from the checkout under this path.
FRAMEWORK_MODULE=github.com/kubevirt-plugins/framework

# The one genproto the framework's go.work selects (it holds no
# googleapis/rpc, which grpc takes from its own module).
GENPROTO_VERSION=v0.0.0-20260128011058-8636f8732409
