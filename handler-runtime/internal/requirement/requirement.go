// SPDX-License-Identifier: Apache-2.0

// Package requirement applies the Plugins a VMI requires (api's
// plugin/v1alpha1/required) to a store snapshot, for the dispatcher and the
// launcher plugin selector alike.
package requirement

import (
	"context"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubevirt-plugins/framework/api/plugin/v1alpha1/required"
	"github.com/kubevirt-plugins/framework/handler-runtime/store"
)

// EvalCondition evaluates a Plugin condition for a VMI.
type EvalCondition func(ctx context.Context, expr string, vmi *kubevirtv1.VirtualMachineInstance) (bool, error)

// Check returns nil when the VMI requires no Plugin or every one it
// requires is in snap, Ready for its generation and selecting the VMI; a
// *required.Error naming each one that is not otherwise. With the Plugins
// feature gate off no Plugin runs, so every required one is missing. eval
// is called only when a required Plugin has a condition.
func Check(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, snap store.Snapshot, eval EvalCondition) error {
	if _, ok := vmi.Annotations[required.Annotation]; !ok {
		return nil
	}
	if snap.Enabled {
		return required.Check(ctx, vmi, snap.Plugins, required.Options{CheckReady: true, EvalCondition: eval})
	}
	names, err := required.Names(vmi)
	if err != nil || len(names) == 0 {
		return err
	}
	rerr := &required.Error{VMI: vmi.Namespace + "/" + vmi.Name}
	for _, n := range names {
		rerr.Unmet = append(rerr.Unmet, required.Unmet{Plugin: n, Reason: required.Missing, Detail: "the Plugins feature gate is off: no Plugin runs"})
	}
	return rerr
}
