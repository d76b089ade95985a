// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// vmState is the VM the scenario takes through its life.
type vmState struct {
	vm     *kubevirtv1.VirtualMachine
	vmi    *kubevirtv1.VirtualMachineInstance
	source *corev1.Pod
	target *corev1.Pod
	// recorderRestart is when the restarted recorder Pod started.
	recorderRestart time.Time
}

// createVM creates vm, its VMI and launcher Pod on node (as
// virt-controller does) and waits for the Pod's containers; the caller
// schedules the VMI.
func (s *scenario) createVM(ctx context.Context, vm *kubevirtv1.VirtualMachine, node string) (*kubevirtv1.VirtualMachine, *kubevirtv1.VirtualMachineInstance, *corev1.Pod, error) {
	if err := s.c.Create(ctx, vm); err != nil {
		return nil, nil, nil, err
	}
	vmi := newVMI(vm)
	if err := s.c.Create(ctx, vmi); err != nil {
		return nil, nil, nil, err
	}
	pod, err := s.createLauncherPod(ctx, vmi, "src", node)
	return vm, vmi, pod, err
}

// createLauncherPod creates the launcher Pod, checks what the injection
// made of it and waits until the kubelet runs all its containers.
func (s *scenario) createLauncherPod(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, suffix, node string) (*corev1.Pod, error) {
	pod := newLauncherPod(vmi, suffix, node)
	if err := s.c.Create(ctx, pod); err != nil {
		return nil, fmt.Errorf("creating launcher Pod %s: %w", pod.Name, err)
	}
	native := nativeSidecars(pod)
	var plain []string
	for _, c := range pod.Spec.Containers {
		plain = append(plain, c.Name)
	}
	s.Check("Pod "+pod.Name+": "+s.injection.injector()+" added "+strings.Join(samples, ", ")+" as native sidecars (restartable init containers)",
		slices.Equal(native, samples) && slices.Equal(plain, []string{"compute"}), "init containers %v, containers %v", native, plain)
	err := s.waitContainers(ctx, pod)
	if !s.Check("the kubelet on "+node+" runs the Pod: "+containerStates(pod), err == nil && pod.Spec.NodeName == node, "%s", errText(err)) {
		s.dumpPods(ctx, pod.Namespace)
		return nil, errCheckFailed
	}
	return pod, nil
}

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

// schedule does virt-controller's part of a start: the VMI is Scheduled on
// the node of its launcher Pod.
func (s *scenario) schedule(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, pod *corev1.Pod) error {
	return s.scheduleOn(ctx, vmi, pod, pod.Spec.NodeName)
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

// checkDomain checks every plugin's change in the domain libvirt runs.
func (s *scenario) checkDomain(d *libvirtxml.Domain, vmi *kubevirtv1.VirtualMachineInstance, where string) {
	for _, c := range domainChecks {
		s.Check(where+": "+c.name, c.ok(d, vmi), "%s", c.detail(d))
	}
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

func (s *scenario) bootVM(ctx context.Context) error {
	vm, vmi, pod, err := s.createVM(ctx, newVM("demo-vm", "5e9c7a1d-3b2f-4c8e-9a61-0d4f2b7e8c13"), s.workers[0])
	if err != nil {
		return err
	}
	s.vm = &vmState{vm: vm, vmi: vmi, source: pod}
	s.Show("VM, VMI and launcher Pod " + pod.Name + " created as virt-controller would; the VMI is scheduled on " + s.workers[0])
	if err := s.schedule(ctx, vmi, pod); err != nil {
		return err
	}
	err = s.waitVMI(ctx, vmi, "the VMI to run", func(v *kubevirtv1.VirtualMachineInstance) bool { return v.Status.Phase == kubevirtv1.Running })
	if !s.Check("the virt-handler stand-in on "+s.workers[0]+" handed the plugins over and the launcher booted the VM", err == nil, "%s", errText(err)) {
		s.dumpPods(ctx, standinNamespace)
		s.dumpPods(ctx, vmNamespace)
		return errCheckFailed
	}
	tl, err := readTimeline(vmi)
	if err == nil {
		err = checkTimeline(tl, scenarioHooks)
	}
	if s.Check("the stand-ins timed the boot, step by step, on the VMI: every step and hook, in order", err == nil, "%s", errText(err)) {
		s.Show("boot timeline: " + describeTimeline(tl))
	}
	d, state, err := s.domain(ctx, pod, vmi)
	if err != nil {
		return err
	}
	s.Check("libvirt in the launcher Pod reports the domain running", state == "running", "%s", state)
	s.checkDomain(d, vmi, "libvirt's domain")
	s.checkNoCloud(ctx, pod, vmi)
	if _, err := s.checkGuest(ctx, pod); err != nil {
		return err
	}
	return nil
}

// checkNoCloud checks cloudinit-network's change in the NoCloud ISO the
// launcher made.
func (s *scenario) checkNoCloud(ctx context.Context, pod *corev1.Pod, vmi *kubevirtv1.VirtualMachineInstance) {
	iso := "/var/run/kubevirt-ephemeral-disks/cloud-init-data/" + vmi.Namespace + "/" + vmi.Name + "/noCloud.iso"
	nc, err := s.kubectl(ctx, "", "-n", pod.Namespace, "exec", pod.Name, "-c", "compute", "--", "/usr/local/bin/virt-launcher", "-print-network-config", iso)
	s.Check("cloudinit-network added the secondary network red to the NoCloud ISO (PreBoot)", err == nil && strings.Contains(nc, redMAC) &&
		strings.Contains(nc, "192.168.10.5/24"), "%s%s", strings.TrimSpace(nc), errSuffix(err))
}

func (s *scenario) syncLabel(ctx context.Context) error {
	v := s.vm
	pod := &corev1.Pod{}
	if err := s.c.Get(ctx, client.ObjectKeyFromObject(v.source), pod); err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"labels":{%q:"gold"}}}}}`, syncedLabel)
	if err := s.c.Patch(ctx, v.vm, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return err
	}
	s.Show("VM template label " + syncedLabel + ": silver -> gold")
	start := time.Now()
	err := poll(ctx, "the label on the Pod", 2*time.Minute, func() (bool, string, error) {
		var p corev1.Pod
		if err := s.c.Get(ctx, client.ObjectKeyFromObject(pod), &p); err != nil {
			return false, "", err
		}
		return p.Labels[syncedLabel] == "gold", p.Labels[syncedLabel], nil
	})
	var after corev1.Pod
	_ = s.c.Get(ctx, client.ObjectKeyFromObject(pod), &after)
	var vmi kubevirtv1.VirtualMachineInstance
	_ = s.c.Get(ctx, client.ObjectKeyFromObject(v.vmi), &vmi)
	s.Check("the label-syncer set it on the VMI and on the running launcher Pod", err == nil && vmi.Labels[syncedLabel] == "gold",
		"VMI %q, Pod %q after %s%s", vmi.Labels[syncedLabel], after.Labels[syncedLabel], time.Since(start).Round(100*time.Millisecond), errSuffix(err))
	s.Check("in place: the same Pod, still running, no container restarted", after.UID == pod.UID && after.Status.Phase == corev1.PodRunning &&
		restarts(&after) == restarts(pod), "UID %s, phase %s, restarts %d", after.UID, after.Status.Phase, restarts(&after))
	return nil
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

func (s *scenario) migrate(ctx context.Context) error {
	v := s.vm
	target, err := s.createLauncherPod(ctx, v.vmi, "tgt", s.workers[1])
	if err != nil {
		return err
	}
	v.target = target
	before, err := s.guestReport(ctx, v.source)
	if !s.Check("the guest ticks in the source Pod before the migration", err == nil && len(before.Ticks) > 0,
		"%d ticks%s", len(before.Ticks), errSuffix(err)) {
		return errCheckFailed
	}
	if err := s.startMigration(ctx, v.vmi, "migration-1", s.workers[0], target); err != nil {
		return err
	}
	s.Show("migration state set on the VMI as virt-controller would: " + s.workers[0] + " -> " + s.workers[1] + " (Pod " + target.Name + ")")
	start := time.Now()
	err = s.waitMigration(ctx, v.vmi)
	ms := v.vmi.Status.MigrationState
	if !s.Check("the handlers prepared the target and the source launcher migrated the VM", err == nil && ms != nil && ms.Completed && !ms.Failed,
		"after %s%s", time.Since(start).Round(100*time.Millisecond), errSuffix(err)) {
		s.dumpPods(ctx, standinNamespace)
		s.dumpPods(ctx, vmNamespace)
		return errCheckFailed
	}
	var config struct{ Flags, Params string }
	_ = json.Unmarshal([]byte(v.vmi.Annotations[migrationConfigKey]), &config)
	s.Show("migration flags " + config.Flags + ", parameters " + config.Params)
	s.Check("migration-tuner set VIR_MIGRATE_PARALLEL and parallel.connections=2 (from migration.example.com/parallel)",
		hasFlag(config.Flags, 1<<17) && strings.Contains(strings.ReplaceAll(config.Params, " ", ""), `"parallelConnections":{"value":2}`),
		"flags %s, params %s", config.Flags, config.Params)
	d, state, err := s.domain(ctx, target, v.vmi)
	if err != nil {
		return err
	}
	s.Check("libvirt in the target Pod on "+s.workers[1]+" runs the domain with every plugin's change", state == "running", "%s", state)
	s.checkDomain(d, v.vmi, "migrated domain")
	s.checkGuestMigrated(ctx, target, before, time.Since(start))
	err = s.waitCompleted(ctx, v.source)
	s.Check("the source Pod reached Succeeded with every container terminated", err == nil, "%s%s", containerStates(v.source), errSuffix(err))
	return nil
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

func hasFlag(hex string, bit uint64) bool {
	var f uint64
	if _, err := fmt.Sscanf(hex, "0x%x", &f); err != nil {
		return false
	}
	return f&bit != 0
}

func (s *scenario) stopVM(ctx context.Context) error {
	v := s.vm
	if err := s.c.Delete(ctx, v.vmi); err != nil {
		return err
	}
	s.Show("VMI deleted, as virt-controller does when the VM stops")
	err := poll(ctx, "the VMI to go", 4*time.Minute, func() (bool, string, error) {
		var vmi kubevirtv1.VirtualMachineInstance
		err := s.c.Get(ctx, client.ObjectKeyFromObject(v.vmi), &vmi)
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, fmt.Sprintf("finalizers %v", vmi.Finalizers), client.IgnoreNotFound(err)
	})
	s.Check("the handler on "+s.workers[1]+" stopped the VM and released the VMI", err == nil, "%s", errText(err))
	err = s.waitCompleted(ctx, v.target)
	s.Check("the target Pod reached Succeeded with every container terminated", err == nil, "%s%s", containerStates(v.target), errSuffix(err))
	return nil
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
