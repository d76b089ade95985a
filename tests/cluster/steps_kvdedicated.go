// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	dedicatedManifest = "kubevirt/manifests/vm-dedicated.yaml"
	dedicatedVMName   = "dedicated-vm"
)

// kvDedicated boots, through KubeVirt, a VM with dedicatedCpuPlacement that
// cel-tuning and smbios-watchdog select. KubeVirt makes compute Guaranteed
// and the injection keeps the Pod so (smbios-watchdog's sidecar gets its
// Guaranteed resources); the kubelet's static CPU manager gives compute a
// CPU of its own, and KubeVirt pins the vCPU to it in the domain.
func (s *scenario) kvDedicated(ctx context.Context) error {
	labelled, err := s.kubectl(ctx, "", "get", "nodes", "-l", "cpumanager=true", "-o", "jsonpath={.items[*].metadata.name}")
	if err != nil {
		return err
	}
	s.Check("virt-handler labelled the workers cpumanager=true (KubeVirt's CPUManager gate, the kubelets' static CPU manager)",
		sameNames(strings.Fields(labelled), s.workers), "labelled: %q, workers %v", labelled, s.workers)
	m, err := s.kvManifest(dedicatedManifest)
	if err != nil {
		return err
	}
	created := time.Now()
	if _, err := s.kubectl(ctx, m, "apply", "-f", "-"); err != nil {
		return err
	}
	s.Show("$ kubectl apply -f " + dedicatedManifest + " (cores 1, dedicatedCpuPlacement: true)")
	vmi, err := s.waitVMIRunning(ctx, dedicatedVMName)
	if !s.Check("the dedicated-CPU VM runs", err == nil, "Running %s after kubectl apply%s", time.Since(created).Round(100*time.Millisecond), errSuffix(err)) {
		s.dumpPods(ctx, vmNamespace)
		return errCheckFailed
	}
	pod, err := s.launcherPodOf(ctx, vmi)
	if err != nil {
		return err
	}
	node := vmi.Status.NodeName
	s.Show(fmt.Sprintf("VMI %s on %s in Pod %s", vmi.Name, node, pod.Name))
	compute := namedContainer(pod.Spec.Containers, "compute")
	// The Pod's QoS class depends on CPU and memory only; KubeVirt also
	// asks compute for ephemeral storage and devices.
	req, lim := compute.Resources.Requests, compute.Resources.Limits
	s.Check("KubeVirt gave compute one whole CPU, and memory, with requests equal to limits: "+resourceText(lim),
		lim.Cpu().MilliValue() == 1000 && req.Cpu().Cmp(*lim.Cpu()) == 0 && !lim.Memory().IsZero() && req.Memory().Cmp(*lim.Memory()) == 0,
		"requests %v, limits %v", req, lim)
	want := s.sidecars["smbios-watchdog"].Resources.Guaranteed
	r := namedContainer(pod.Spec.InitContainers, "smbios-watchdog").Resources
	s.Check(fmt.Sprintf("smbios-watchdog's sidecar, injected into KubeVirt's Pod: requests equal to limits, %s (its description's Guaranteed resources)", resourceText(want)),
		len(want) > 0 && sameResources(r.Requests, r.Limits) && sameResources(r.Limits, want),
		"requests %s, limits %s", resourceText(r.Requests), resourceText(r.Limits))
	s.Check("the launcher Pod read back from the API server is Guaranteed (status.qosClass)", pod.Status.QOSClass == corev1.PodQOSGuaranteed,
		"qosClass %q; containers %s", pod.Status.QOSClass, containerResources(pod))
	own, err := s.checkExclusiveCPU(ctx, node, pod)
	if err != nil {
		return err
	}
	d, state, err := s.kvDomain(ctx, pod, vmi)
	if err != nil {
		return err
	}
	var pins []string
	if d.CPUTune != nil {
		for _, v := range d.CPUTune.VCPUPin {
			pins = append(pins, fmt.Sprintf("vcpu %d on %s", v.VCPU, v.CPUSet))
		}
	}
	pinned := d.CPUTune != nil && len(d.CPUTune.VCPUPin) == 1 && len(own) == 1 && d.CPUTune.VCPUPin[0].CPUSet == fmt.Sprint(own[0])
	s.Check(fmt.Sprintf("virsh dumpxml: KubeVirt pinned the vCPU to compute's exclusive CPU %v, and the domain is %s", own, state),
		pinned && state == "running", "cputune %v", pins)
	s.Check("virsh dumpxml: cel-tuning's title and smbios-watchdog's SMBIOS strings and watchdog",
		d.Title == "VM "+vmi.Namespace+"/"+vmi.Name && smbiosEntry(d, "product") == "Edge-1" && watchdogAction(d) == "poweroff",
		"title %q, product %q, watchdog action %q", d.Title, smbiosEntry(d, "product"), watchdogAction(d))
	g, err := s.kvGuest(ctx, pod)
	if !s.Check("the test guest booted on its dedicated CPU and reported on its serial console", err == nil, "%s", errText(err)) {
		return errCheckFailed
	}
	for _, c := range guestChecks {
		s.Check("in the guest: "+c.name, c.ok(g), "%s", printed(g, c.keys...))
	}
	s.Check("in the guest: one vCPU", g.VCPUs == 1, "%s", printed(g, "vcpus"))
	if _, err := s.kubectl(ctx, "", "-n", vmNamespace, "delete", "vm", dedicatedVMName, "--wait=false"); err != nil {
		return err
	}
	err = s.waitPodGone(ctx, pod, 2*time.Minute)
	s.Check("deleted, its launcher Pod and exclusive CPU released", err == nil, "%s", errText(err))
	return nil
}

// sameNames tells whether two lists hold the same names.
func sameNames(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// containerResources lists the resources of every container of p, init
// containers first.
func containerResources(p *corev1.Pod) string {
	var parts []string
	for _, c := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
		parts = append(parts, fmt.Sprintf("%s: requests %s, limits %s", c.Name, resourceText(c.Resources.Requests), resourceText(c.Resources.Limits)))
	}
	return strings.Join(parts, "; ")
}

// waitPodGone waits for p to be deleted.
func (s *scenario) waitPodGone(ctx context.Context, p *corev1.Pod, timeout time.Duration) error {
	return poll(ctx, "Pod "+p.Name+" to go", timeout, func() (bool, string, error) {
		var cur corev1.Pod
		err := s.c.Get(ctx, client.ObjectKeyFromObject(p), &cur)
		if err == nil {
			return cur.UID != p.UID, "phase " + string(cur.Status.Phase), nil
		}
		return client.IgnoreNotFound(err) == nil, err.Error(), nil
	})
}
