module github.com/kubevirt-plugins/framework/handler-runtime

go 1.26.0
