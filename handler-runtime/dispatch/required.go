// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubevirt-plugins/framework/api/plugin/v1alpha1/required"
	"github.com/kubevirt-plugins/framework/handler-runtime/internal/requirement"
	"github.com/kubevirt-plugins/framework/handler-runtime/store"
)

// ReasonRequiredPluginUnavailable is the reason of the Warning Event
// written on a VMI whose PreVMStart fails because a Plugin it requires
// (annotation plugin.kubevirt.io/required) is missing, not Ready or does
// not select it.
const ReasonRequiredPluginUnavailable = "RequiredPluginUnavailable"

// checkRequired fails PreVMStart for a VMI whose required Plugins are not
// all satisfied, naming each one and why, and writes an Event per unmet
// Plugin (deduplicated like hook failures).
func (d *Dispatcher) checkRequired(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, snap store.Snapshot) error {
	err := requirement.Check(ctx, vmi, snap, d.holds)
	if err == nil {
		return nil
	}
	if rerr, ok := errors.AsType[*required.Error](err); ok {
		for _, u := range rerr.Unmet {
			d.events.write(vmi, u.Plugin, corev1.EventTypeWarning, ReasonRequiredPluginUnavailable,
				fmt.Sprintf("required plugin %q (annotation %s) %s: %s; PreVMStart fails", u.Plugin, required.Annotation, u.Reason, u.Detail))
		}
	}
	return fmt.Errorf("dispatching node hook point PreVMStart for VMI %s/%s: %w", vmi.Namespace, vmi.Name, err)
}
