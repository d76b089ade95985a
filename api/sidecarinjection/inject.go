// SPDX-License-Identifier: Apache-2.0

package sidecarinjection

import (
	corev1 "k8s.io/api/core/v1"
)

// qosResources are the resources a Pod's QoS class is decided on.
var qosResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// Guaranteed tells whether the Pod's containers, init containers
// included, all set CPU and memory limits above zero with requests equal
// to them (a request left out is taken from its limit, as the API server
// defaults it): the rule Policy's CEL applies too.
func Guaranteed(spec *corev1.PodSpec) bool {
	for _, list := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
		for i := range list {
			if !guaranteedContainer(&list[i].Resources) {
				return false
			}
		}
	}
	return true
}

func guaranteedContainer(r *corev1.ResourceRequirements) bool {
	for _, name := range qosResources {
		lim, ok := r.Limits[name]
		if !ok || lim.Sign() <= 0 {
			return false
		}
		if req, ok := r.Requests[name]; ok && req.Cmp(lim) != 0 {
			return false
		}
	}
	return true
}

// Wants tells whether the sidecar goes into the Pod: a launcher Pod that
// carries the sidecar's label and has no container of its name yet.
func (s *Sidecar) Wants(pod *corev1.Pod) bool {
	if pod.Labels[LauncherLabel] != LauncherLabelValue {
		return false
	}
	if _, ok := pod.Labels[s.Label]; !ok {
		return false
	}
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range list {
			if c.Name == s.Plugin {
				return false
			}
		}
	}
	return true
}

// Inject adds to the Pod, in order, each sidecar it wants, and returns
// the names of the plugins whose sidecars it added. Each sidecar's
// resources follow the Pod's QoS class as it is when that sidecar is
// added, as consecutive admission policies see it.
func Inject(pod *corev1.Pod, sidecars []*Sidecar) []string {
	var added []string
	for _, s := range sidecars {
		if !s.Wants(pod) {
			continue
		}
		have := map[string]bool{}
		for _, v := range pod.Spec.Volumes {
			have[v.Name] = true
		}
		for _, v := range s.volumes() {
			if !have[v.Name] {
				pod.Spec.Volumes = append(pod.Spec.Volumes, *v.DeepCopy())
			}
		}
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, s.Container(Guaranteed(&pod.Spec)))
		added = append(added, s.Plugin)
	}
	return added
}
