# KubeVirt Plugins framework. `make help` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

# Module-specific generators add themselves to GENERATE_TARGETS.
GENERATE_TARGETS :=
-include */Makefile.inc

.PHONY: help setup generate verify test bench bench-kubevirt images demo release

help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

setup: ## Install packages, start Docker, build the kind node image, kube-apiserver, etcd and the libvirtd image (cached).
	@hack/setup.sh

generate: ## Regenerate deepcopy, CRDs, protos and RBAC from scratch.
	@hack/generate.sh
	@$(if $(GENERATE_TARGETS),$(MAKE) -s $(GENERATE_TARGETS))

verify: ## Fail on stale generated code, untidy or misaligned modules, gofmt, vet or golangci-lint findings.
	@hack/verify.sh

test: setup ## Run every module's tests, the integration tests on a real API server and libvirtd included.
	@hack/test.sh

bench: setup ## Run the Go benchmarks reported in docs/benchmarks.md.
	@hack/bench.sh

bench-kubevirt: setup ## Boot VMs on KubeVirt v1.9.0 as released (alpha-1 CEL hook) and patched (the framework) on one kind cluster (docs/benchmarks-kubevirt.md).
	@hack/bench-kubevirt.sh

images: setup ## Build one image per component (controllers and samples) with the local Docker engine.
	@hack/images.sh

demo: setup ## Show the whole system on a local kind cluster: deploy/, the samples, a VM booted, migrated and stopped (DEMO=quick: no cluster).
	@hack/demo.sh

release: ## Tag one module: make release MODULE=api VERSION=v0.1.0
	@hack/release.sh $(MODULE) $(VERSION)
