module github.com/kubevirt-plugins/framework/label-syncer

go 1.26.0
