// SPDX-License-Identifier: Apache-2.0

// Package reconcilers_test holds what the reconcilers of plugin-controller
// and of the label syncer must have in common.
package reconcilers_test

import (
	"context"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kubevirt-plugins/framework/label-syncer/reconcilers/vm"
	"github.com/kubevirt-plugins/framework/label-syncer/reconcilers/vmi"
	"github.com/kubevirt-plugins/framework/label-syncer/syncer"
	pluginreconciler "github.com/kubevirt-plugins/framework/plugin-controller/reconcilers/plugin"
)

// setUp is the one SetupWithManager signature of the project's reconcilers.
type setUp interface {
	SetupWithManager(ctx context.Context, mgr ctrl.Manager) error
}

var _ = []setUp{&pluginreconciler.Reconciler{}, &vm.Reconciler{}, &vmi.Reconciler{}}

func TestReconcilersShareOneWorkerDefault(t *testing.T) {
	want := pluginreconciler.DefaultMaxConcurrentReconciles
	for name, got := range map[string]int{
		"vm": vm.DefaultMaxConcurrentReconciles, "vmi": vmi.DefaultMaxConcurrentReconciles,
		"syncer": syncer.DefaultMaxConcurrentReconciles,
	} {
		if got != want {
			t.Errorf("%s.DefaultMaxConcurrentReconciles = %d, plugin's is %d", name, got, want)
		}
	}
}
