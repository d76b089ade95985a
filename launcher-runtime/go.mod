module github.com/kubevirt-plugins/framework/launcher-runtime

go 1.26.0
