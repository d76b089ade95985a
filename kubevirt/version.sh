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

# The framework's modules KubeVirt links. They ask for the release's
# versions of what the release also requires (hack/deps.sh keeps them so),
# so that linking them leaves KubeVirt's dependencies where it has them.
LINKED_MODULES=(api protos launcher-runtime handler-runtime)

# The environment of every go command run on the release's tree (its
# build, its unit tests, its e2e): one set of flags, -trimpath included,
# so that what one compiled the others take from Go's build cache (a
# package compiled with other flags is compiled again).
KUBEVIRT_GO_ENV=(GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=1 "GOFLAGS=-mod=mod -trimpath")
