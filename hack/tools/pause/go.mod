// Module pause builds the sandbox ("pause") image of the local kind
// clusters (hack/kind): no registry is reachable to pull one.
module github.com/kubevirt-plugins/framework/hack/tools/pause

go 1.26.0
