// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

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
	compute := namedContainer(p.Spec.Containers, "compute")
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

// namedContainer is the container of list named name, or an empty one.
func namedContainer(list []corev1.Container, name string) corev1.Container {
	if i := slices.IndexFunc(list, func(c corev1.Container) bool { return c.Name == name }); i >= 0 {
		return list[i]
	}
	return corev1.Container{}
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
