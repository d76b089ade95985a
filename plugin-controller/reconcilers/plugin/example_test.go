// SPDX-License-Identifier: Apache-2.0

package plugin_test

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kubevirt-plugins/framework/api/celenv"
	pluginreconciler "github.com/kubevirt-plugins/framework/plugin-controller/reconcilers/plugin"
	pluginwebhook "github.com/kubevirt-plugins/framework/plugin-controller/webhooks/plugin"
)

// Wiring the status reconciler and the webhook into a manager whose scheme
// knows the Plugin types, with one CEL environment for both so that
// admission and status agree.
func ExampleReconciler_SetupWithManager() {
	ctx := context.Background()
	var mgr ctrl.Manager // from ctrl.NewManager
	env, err := celenv.New(celenv.Options{})
	if err != nil {
		panic(err)
	}
	if err := (&pluginreconciler.Reconciler{CEL: env}).SetupWithManager(ctx, mgr); err != nil {
		panic(err)
	}
	if err := (&pluginwebhook.Validator{CEL: env}).SetupWebhookWithManager(mgr); err != nil {
		panic(err)
	}
	_ = mgr.Start(ctx)
}
