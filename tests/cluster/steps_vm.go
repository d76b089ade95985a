// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// waitContainers waits until the kubelet runs every container of pod; a
// Pod that ended will not.
func (s *scenario) waitContainers(ctx context.Context, pod *corev1.Pod) error {
	return poll(ctx, "Pod "+pod.Name+" to run every container", 4*time.Minute, func() (bool, string, error) {
		if err := s.c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, "", err
		}
		if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
			return false, "", fmt.Errorf("the Pod is %s: %s", pod.Status.Phase, containerStates(pod))
		}
		started := pod.Status.Phase == corev1.PodRunning
		for _, st := range slices.Concat(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses) {
			started = started && st.Started != nil && *st.Started
		}
		return started, containerStates(pod), nil
	})
}

// scheduleOn is schedule for a launcher Pod the scheduler has not bound
// yet, bound to node by its node selector.
func (s *scenario) scheduleOn(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, pod *corev1.Pod, node string) error {
	return s.patchVMIStatus(ctx, vmi, func(v *kubevirtv1.VirtualMachineInstance) {
		v.Status.NodeName = node
		v.Status.Phase = kubevirtv1.Scheduled
		v.Status.ActivePods = map[types.UID]string{pod.UID: node}
	})
}

func (s *scenario) patchVMIStatus(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, edit func(*kubevirtv1.VirtualMachineInstance)) error {
	if err := s.c.Get(ctx, client.ObjectKeyFromObject(vmi), vmi); err != nil {
		return err
	}
	before := vmi.DeepCopy()
	edit(vmi)
	return s.c.Status().Patch(ctx, vmi, client.MergeFrom(before))
}

func (s *scenario) waitVMI(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, what string, cond func(*kubevirtv1.VirtualMachineInstance) bool) error {
	return poll(ctx, what, 4*time.Minute, func() (bool, string, error) {
		if err := s.c.Get(ctx, client.ObjectKeyFromObject(vmi), vmi); err != nil {
			return false, err.Error(), nil
		}
		return cond(vmi), fmt.Sprintf("phase %s on %s", vmi.Status.Phase, vmi.Status.NodeName), nil
	})
}

// domain reads the live domain from libvirt in the Pod's compute container.
func (s *scenario) domain(ctx context.Context, pod *corev1.Pod, vmi *kubevirtv1.VirtualMachineInstance) (*libvirtxml.Domain, string, error) {
	name := vmi.Namespace + "_" + vmi.Name
	state, err := s.kubectl(ctx, "", "-n", pod.Namespace, "exec", pod.Name, "-c", "compute", "--", "virsh", "-c", "qemu:///system", "domstate", name)
	if err != nil {
		return nil, "", err
	}
	x, err := s.kubectl(ctx, "", "-n", pod.Namespace, "exec", pod.Name, "-c", "compute", "--", "virsh", "-c", "qemu:///system", "dumpxml", name)
	if err != nil {
		return nil, "", err
	}
	var d libvirtxml.Domain
	if err := d.Unmarshal(x); err != nil {
		return nil, "", err
	}
	return &d, strings.TrimSpace(state), nil
}

func smbiosEntry(d *libvirtxml.Domain, name string) string {
	for _, si := range d.SysInfo {
		if si.SMBIOS == nil || si.SMBIOS.System == nil {
			continue
		}
		for _, e := range si.SMBIOS.System.Entry {
			if e.Name == name {
				return e.Value
			}
		}
	}
	return ""
}

func watchdogAction(d *libvirtxml.Domain) string {
	if d.Devices == nil {
		return ""
	}
	for _, w := range d.Devices.Watchdogs {
		if w.Model == "i6300esb" {
			return w.Action
		}
	}
	return ""
}

// domainChecks are each plugin's change in the domain libvirt runs, for a
// VM with every sample plugin.
var domainChecks = []struct {
	name   string
	ok     func(*libvirtxml.Domain, *kubevirtv1.VirtualMachineInstance) bool
	detail func(*libvirtxml.Domain) string
}{
	{"cel-tuning set the title and 2 vCPUs", func(d *libvirtxml.Domain, vmi *kubevirtv1.VirtualMachineInstance) bool {
		return d.Title == "VM "+vmi.Namespace+"/"+vmi.Name && d.VCPU != nil && d.VCPU.Value == 2
	}, func(d *libvirtxml.Domain) string {
		vcpus := uint(0)
		if d.VCPU != nil {
			vcpus = d.VCPU.Value
		}
		return fmt.Sprintf("title %q, %d vCPUs", d.Title, vcpus)
	}},
	{"smbios-watchdog set SMBIOS from the labels and added the watchdog", func(d *libvirtxml.Domain, _ *kubevirtv1.VirtualMachineInstance) bool {
		return smbiosEntry(d, "manufacturer") == "Example" && smbiosEntry(d, "product") == "Edge-1" && watchdogAction(d) == "reset"
	}, func(d *libvirtxml.Domain) string {
		return fmt.Sprintf("manufacturer %q, product %q, watchdog action %q", smbiosEntry(d, "manufacturer"), smbiosEntry(d, "product"), watchdogAction(d))
	}},
}

// domainMisses names the domainChecks d fails.
func domainMisses(d *libvirtxml.Domain, vmi *kubevirtv1.VirtualMachineInstance) []string {
	var out []string
	for _, c := range domainChecks {
		if !c.ok(d, vmi) {
			out = append(out, c.name+" ("+c.detail(d)+")")
		}
	}
	return out
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, st := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
		n += st.RestartCount
	}
	return n
}

// waitCompleted waits until the Pod has Succeeded with every container
// terminated, then lets it go (podFinalizer).
func (s *scenario) waitCompleted(ctx context.Context, pod *corev1.Pod) error {
	defer s.release(ctx, pod)
	return poll(ctx, "Pod "+pod.Name+" to complete", 3*time.Minute, func() (bool, string, error) {
		var p corev1.Pod
		if err := s.c.Get(ctx, client.ObjectKeyFromObject(pod), &p); err != nil {
			return false, "", err
		}
		if p.Status.Phase == corev1.PodFailed {
			return false, "", fmt.Errorf("the Pod Failed: %s", containerStates(&p))
		}
		all := p.Status.Phase == corev1.PodSucceeded
		for _, st := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
			all = all && st.State.Terminated != nil
		}
		*pod = p
		return all, fmt.Sprintf("%s: %s", p.Status.Phase, containerStates(&p)), nil
	})
}

// startMigration does virt-controller's part of a migration: the VMI's
// migration state names the source node and the target Pod, already
// running on its node.
func (s *scenario) startMigration(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, uid, source string, target *corev1.Pod) error {
	return s.patchVMIStatus(ctx, vmi, func(v *kubevirtv1.VirtualMachineInstance) {
		v.Status.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{
			MigrationUID: types.UID(uid), SourceNode: source, TargetNode: target.Spec.NodeName, TargetPod: target.Name,
		}
	})
}

// waitMigration waits until the VMI's migration completed or failed.
func (s *scenario) waitMigration(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) error {
	return s.waitVMI(ctx, vmi, "the migration to complete", func(v *kubevirtv1.VirtualMachineInstance) bool {
		ms := v.Status.MigrationState
		return ms != nil && (ms.Completed || ms.Failed)
	})
}

// release removes podFinalizer from the Pod.
func (s *scenario) release(ctx context.Context, pod *corev1.Pod) {
	var p corev1.Pod
	if err := s.c.Get(ctx, client.ObjectKeyFromObject(pod), &p); err != nil {
		return
	}
	patch := client.MergeFrom(p.DeepCopy())
	p.Finalizers = slices.DeleteFunc(p.Finalizers, func(f string) bool { return f == podFinalizer })
	if err := s.c.Patch(context.WithoutCancel(ctx), &p, patch); err != nil {
		fmt.Fprintf(s.log, "releasing Pod %s: %v\n", p.Name, err)
	}
}
