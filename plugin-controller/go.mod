module github.com/kubevirt-plugins/framework/plugin-controller

go 1.26.0
