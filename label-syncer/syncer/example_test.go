// SPDX-License-Identifier: Apache-2.0

package syncer_test

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kubevirt-plugins/framework/label-syncer/keyfilter"
	"github.com/kubevirt-plugins/framework/label-syncer/syncer"
)

// A syncer for the labels under ops.example.com/ and one annotation, run
// until ctx ends.
func ExampleNewManager() {
	ctx := ctrl.SetupSignalHandler()
	labels, err := keyfilter.Parse("ops.example.com/*")
	if err != nil {
		panic(err)
	}
	annotations, err := keyfilter.Parse("notes.example.com/ticket")
	if err != nil {
		panic(err)
	}
	mgr, err := syncer.NewManager(ctx, ctrl.GetConfigOrDie(), syncer.Options{
		Labels:                 labels,
		Annotations:            annotations,
		MetricsBindAddress:     ":8080",
		HealthProbeBindAddress: ":8081",
	})
	if err != nil {
		panic(err)
	}
	if err := mgr.Start(ctx); err != nil && ctx.Err() == nil {
		panic(err)
	}
}
