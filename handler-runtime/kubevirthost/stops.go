// SPDX-License-Identifier: Apache-2.0

package kubevirthost

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/handler-runtime/dispatch"
)

// MaxOwedStops bounds how many stopping VMIs a Handler remembers between
// their OnVMStop and their PostVMStop; past it the oldest is forgotten. A
// node runs far fewer VMIs.
const MaxOwedStops = 1024

// owedStops remembers the VMIs whose stop began on this node (OnVMStop was
// called) and whose PostVMStop has not been called since, by namespace and
// name: KubeVirt's virt-handler knows no more of a VMI that is gone.
type owedStops struct {
	byKey map[types.NamespacedName]owedStop
}

type owedStop struct {
	vmi *kubevirtv1.VirtualMachineInstance
	at  time.Time
}

func vmiKey(vmi *kubevirtv1.VirtualMachineInstance) types.NamespacedName {
	return types.NamespacedName{Namespace: vmi.Namespace, Name: vmi.Name}
}

// owe records that vmi's stop began; a later OnVMStop of the VMI (virt-handler
// repeats it while the domain shuts down) keeps the newest copy.
func (o *owedStops) owe(vmi *kubevirtv1.VirtualMachineInstance, now time.Time) {
	if o.byKey == nil {
		o.byKey = map[types.NamespacedName]owedStop{}
	}
	k := vmiKey(vmi)
	if _, ok := o.byKey[k]; !ok && len(o.byKey) >= MaxOwedStops {
		var oldest types.NamespacedName
		var at time.Time
		for key, s := range o.byKey {
			if at.IsZero() || s.at.Before(at) {
				oldest, at = key, s.at
			}
		}
		delete(o.byKey, oldest)
	}
	o.byKey[k] = owedStop{vmi: vmi.DeepCopy(), at: now}
}

// take forgets and returns the VMI owed a PostVMStop under vmi's namespace
// and name, if it is the same VMI (a vmi without a UID matches any).
func (o *owedStops) take(vmi *kubevirtv1.VirtualMachineInstance) (*kubevirtv1.VirtualMachineInstance, bool) {
	k := vmiKey(vmi)
	s, ok := o.byKey[k]
	if !ok || (vmi.UID != "" && vmi.UID != s.vmi.UID) {
		return nil, false
	}
	delete(o.byKey, k)
	return s.vmi, true
}

// VMStopped is for virt-handler's removal of a VMI's domain that is no
// longer alive on node nodeName (the VM stopped here, not migrated away),
// which KubeVirt v1.9 reaches whether or not one of its syncs saw the VMI
// in a final phase, the one moment it calls PostVMStop. If OnVMStop was
// called for the VMI and PostVMStop has not been since, PostVMStop's hooks
// are called now, once: with vmi as virt-handler has it, or, when the VMI
// is gone from the cluster (vmiGone: virt-handler then knows its namespace
// and name, maybe its UID), as it was at its last OnVMStop. Otherwise
// nothing is called. So a stop KubeVirt began always ends with PostVMStop,
// also when the VMI is deleted before virt-handler sees it Succeeded.
//
// The error is the dispatch's, a *dispatch.HookError naming the hook that
// failed under failureStrategy Fail; the call is not repeated.
func (h *Handler) VMStopped(vmi *kubevirtv1.VirtualMachineInstance, vmiGone bool, nodeName string) error {
	h.stopsMu.Lock()
	owed, ok := h.stops.take(vmi)
	h.stopsMu.Unlock()
	if !ok {
		return nil
	}
	if !vmiGone {
		owed = vmi
	}
	h.log.V(1).Info("PostVMStop owed at the removal of the stopped domain", "vmi", owed.Namespace+"/"+owed.Name, "uid", owed.UID, "vmiGone", vmiGone)
	return h.hooks.Dispatch(context.Background(), pluginv1alpha1.PostVMStop, owed, dispatch.NodeContext{NodeName: nodeName})
}

// trackStop notes OnVMStop and PostVMStop of vmi for VMStopped.
func (h *Handler) trackStop(p pluginv1alpha1.NodeHookPoint, vmi *kubevirtv1.VirtualMachineInstance) {
	h.stopsMu.Lock()
	defer h.stopsMu.Unlock()
	switch p {
	case pluginv1alpha1.OnVMStop:
		h.stops.owe(vmi, time.Now())
	case pluginv1alpha1.PostVMStop:
		h.stops.take(vmi)
	}
}
