// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// dedicatedVM boots a VM with dedicated CPUs. Its launcher Pod is
// Guaranteed (compute's requests equal its limits, one whole CPU), and the
// injection must keep it so: each sidecar gets requests equal to limits,
// else the Pod would turn Burstable and compute lose its exclusive CPU.
// Where the workers' kubelets run the static CPU manager, compute's
// exclusive CPU is checked too.
func (s *scenario) dedicatedVM(ctx context.Context) error {
	vm := newDedicatedVM("demo-vm-dedicated", "7c1e4b9a-2d6f-4a83-b5e0-9f3c8d2a6b14")
	compute := launcherResources(newVMI(vm))
	need := compute.Requests.Cpu().MilliValue()
	var parts []string
	for _, name := range samples {
		cpu := s.sidecars[name].Resources.Guaranteed[corev1.ResourceCPU]
		need += cpu.MilliValue()
		parts = append(parts, name+" "+cpu.String())
	}
	s.Show(fmt.Sprintf("the launcher Pod will request %dm CPU: compute %s (dedicated), %s", need, compute.Requests.Cpu(), strings.Join(parts, ", ")))
	node, room, err := s.roomiestWorker(ctx)
	if err != nil {
		return err
	}
	if !s.Check(fmt.Sprintf("the scheduler can fit it: %s has %dm CPU unrequested", node, room), room >= need, "needs %dm", need) {
		return errCheckFailed
	}
	_, vmi, pod, err := s.createVM(ctx, vm, node)
	if err != nil {
		return err
	}
	var p corev1.Pod
	if err := s.c.Get(ctx, client.ObjectKeyFromObject(pod), &p); err != nil {
		return err
	}
	var c corev1.Container
	if i := slices.IndexFunc(p.Spec.Containers, func(c corev1.Container) bool { return c.Name == "compute" }); i >= 0 {
		c = p.Spec.Containers[i]
	}
	s.Check("compute asks for whole CPUs with requests equal to limits: "+resourceText(c.Resources.Limits),
		sameResources(c.Resources.Requests, c.Resources.Limits) && c.Resources.Limits.Cpu().MilliValue()%1000 == 0,
		"requests %s, limits %s", resourceText(c.Resources.Requests), resourceText(c.Resources.Limits))
	for _, name := range samples {
		want := s.sidecars[name].Resources.Guaranteed
		var r corev1.ResourceRequirements
		if i := slices.IndexFunc(p.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == name }); i >= 0 {
			r = p.Spec.InitContainers[i].Resources
		}
		s.Check(fmt.Sprintf("sidecar %s: requests equal to limits, %s (its description's Guaranteed resources)", name, resourceText(want)),
			sameResources(r.Requests, r.Limits) && sameResources(r.Limits, want),
			"requests %s, limits %s", resourceText(r.Requests), resourceText(r.Limits))
	}
	s.Check("the Pod read back from the API server is Guaranteed (status.qosClass)", p.Status.QOSClass == corev1.PodQOSGuaranteed,
		"qosClass %q", p.Status.QOSClass)
	if _, err := s.checkExclusiveCPU(ctx, node, &p); err != nil {
		return err
	}
	if err := s.schedule(ctx, vmi, &p); err != nil {
		return err
	}
	start := time.Now()
	err = s.waitVMI(ctx, vmi, "the dedicated-CPU VM to run", func(v *kubevirtv1.VirtualMachineInstance) bool { return v.Status.Phase == kubevirtv1.Running })
	if !s.Check("the dedicated-CPU VM booted on "+node, err == nil, "after %s%s", time.Since(start).Round(100*time.Millisecond), errSuffix(err)) {
		s.dumpPods(ctx, standinNamespace)
		s.dumpPods(ctx, vmNamespace)
		return errCheckFailed
	}
	d, state, err := s.domain(ctx, &p, vmi)
	if err != nil {
		return err
	}
	s.Check("libvirt in the Guaranteed Pod reports the domain running", state == "running", "%s", state)
	s.checkDomain(d, vmi, "the dedicated-CPU domain")
	s.checkNoCloud(ctx, &p, vmi)
	if err := s.c.Delete(ctx, vmi); err != nil {
		return err
	}
	err = s.waitCompleted(ctx, &p)
	s.Check("stopped, its Pod completed", err == nil, "%s", errText(err))
	return nil
}

// roomiestWorker shows each worker's allocatable CPU and what its Pods
// request, and returns the worker with the most left.
func (s *scenario) roomiestWorker(ctx context.Context) (string, int64, error) {
	best, bestRoom := "", int64(-1)
	for _, name := range s.workers {
		var n corev1.Node
		if err := s.c.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
			return "", 0, err
		}
		var pods corev1.PodList
		if err := s.c.List(ctx, &pods, client.MatchingFields{"spec.nodeName": name}); err != nil {
			return "", 0, err
		}
		var requested int64
		var count int
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			count++
			requested += podCPURequest(p)
		}
		alloc := n.Status.Allocatable.Cpu().MilliValue()
		room := alloc - requested
		s.Show(fmt.Sprintf("%s: %s CPUs, %dm allocatable, %dm requested by its %d Pods, %dm left",
			name, n.Status.Capacity.Cpu(), alloc, requested, count, room))
		if room > bestRoom {
			best, bestRoom = name, room
		}
	}
	return best, bestRoom, nil
}

// podCPURequest is the CPU the scheduler counts for a Pod: its containers
// and native sidecars, or its largest init container (with the sidecars
// started before it) when that is more, plus its overhead.
func podCPURequest(p *corev1.Pod) int64 {
	var containers, sidecars, initMax int64
	for _, c := range p.Spec.Containers {
		containers += c.Resources.Requests.Cpu().MilliValue()
	}
	for _, c := range p.Spec.InitContainers {
		req := c.Resources.Requests.Cpu().MilliValue()
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars += req
			initMax = max(initMax, sidecars)
			continue
		}
		initMax = max(initMax, sidecars+req)
	}
	return max(containers+sidecars, initMax) + p.Spec.Overhead.Cpu().MilliValue()
}

// cpuManagerState is the kubelet's checkpoint of its CPU manager
// (/var/lib/kubelet/cpu_manager_state): the policy, the shared pool, and
// the exclusive CPUs of each container by Pod UID.
type cpuManagerState struct {
	PolicyName    string                       `json:"policyName"`
	DefaultCPUSet string                       `json:"defaultCpuSet"`
	Entries       map[string]map[string]string `json:"entries"`
}

// checkExclusiveCPU checks, where the kubelet on node runs the static CPU
// manager, that compute got exclusive CPUs of its own and the sidecars
// none: in the kubelet's checkpoint and in the CPUs compute's processes
// may run on. It returns compute's exclusive CPUs, none where the policy
// is not static.
func (s *scenario) checkExclusiveCPU(ctx context.Context, node string, p *corev1.Pod) ([]int, error) {
	out, err := s.onNode(ctx, node, "cat", "/var/lib/kubelet/cpu_manager_state")
	if err != nil {
		return nil, err
	}
	var st cpuManagerState
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		return nil, fmt.Errorf("the CPU manager's checkpoint on %s: %w", node, err)
	}
	if st.PolicyName != "static" {
		s.Show(fmt.Sprintf("the kubelet on %s runs the %q CPU manager policy: compute shares the node's CPUs (docs/cluster.md says why)", node, st.PolicyName))
		return nil, nil
	}
	var compute corev1.Container
	if i := slices.IndexFunc(p.Spec.Containers, func(c corev1.Container) bool { return c.Name == "compute" }); i >= 0 {
		compute = p.Spec.Containers[i]
	}
	mine := st.Entries[string(p.UID)]
	exclusive := mine["compute"]
	shared, err1 := parseCPUList(st.DefaultCPUSet)
	own, err2 := parseCPUList(exclusive)
	overlap := slices.ContainsFunc(own, func(c int) bool { return slices.Contains(shared, c) })
	s.Check(fmt.Sprintf("the static CPU manager on %s gave compute exclusive CPU(s) %s, out of the shared pool %s", node, exclusive, st.DefaultCPUSet),
		err1 == nil && err2 == nil && len(own) == int(compute.Resources.Limits.Cpu().Value()) && !overlap && len(mine) == 1,
		"checkpoint entries of the Pod %v", mine)
	status, err := s.kubectl(ctx, "", "-n", p.Namespace, "exec", p.Name, "-c", "compute", "--", "cat", "/proc/1/status")
	allowed := ""
	for line := range strings.SplitSeq(status, "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			allowed = strings.TrimSpace(v)
		}
	}
	got, err3 := parseCPUList(allowed)
	s.Check("compute's processes run on its exclusive CPU(s) only (Cpus_allowed_list "+allowed+")",
		err == nil && err3 == nil && len(own) > 0 && slices.Equal(got, own), "%s%s", allowed, errSuffix(err))
	return own, nil
}

// parseCPUList reads a Linux CPU list such as "0-2,5".
func parseCPUList(s string) ([]int, error) {
	var cpus []int
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	for part := range strings.SplitSeq(strings.TrimSpace(s), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("CPU list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("CPU list %q: %w", s, err)
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	slices.Sort(cpus)
	return slices.Compact(cpus), nil
}

// sameResources tells whether two lists name the same quantities of the
// same resources.
func sameResources(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, qa := range a {
		qb, ok := b[name]
		if !ok || qa.Cmp(qb) != 0 {
			return false
		}
	}
	return true
}

func resourceText(l corev1.ResourceList) string {
	if len(l) == 0 {
		return "none"
	}
	var parts []string
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := l[name]; ok {
			parts = append(parts, string(name)+" "+q.String())
		}
	}
	return strings.Join(parts, ", ")
}
