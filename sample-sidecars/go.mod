module github.com/kubevirt-plugins/framework/sample-sidecars

go 1.26.0
