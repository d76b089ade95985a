// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubevirt-plugins/framework/tests/framework/gobuild"
)

// What the benchmark reads on a node: the container runtime's own times of a
// Pod's sandbox and containers (from the CRI, in nanoseconds), each container's
// memory from its cgroup, the node's CPU time, and the kubelet's summary.

// containerTimes are one container's times as the runtime gives them.
type containerTimes struct {
	Name    string    `json:"name"`
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
	Started time.Time `json:"started"`
}

// podTimes are a launcher Pod's sandbox and containers: the sidecars (the
// restartable init containers, in the order the kubelet starts them) and
// compute.
type podTimes struct {
	Sandbox  time.Time
	Sidecars []containerTimes
	Compute  containerTimes
}

// containerID is the runtime's ID in a container status.
func containerID(st corev1.ContainerStatus) string {
	_, id, _ := strings.Cut(st.ContainerID, "://")
	return id
}

// criTimes is where the bench puts cmd/cri-times on each worker (the kind
// nodes have no crictl).
const criTimes = "/usr/local/bin/kvp-cri-times"

// installCRITimes builds cmd/cri-times and copies it onto the workers.
func (s *scenario) installCRITimes(ctx context.Context) error {
	out := filepath.Join(s.root, "bin", "cri-times")
	if err := gobuild.Static("tests", "./cluster/cmd/cri-times", out); err != nil {
		return err
	}
	for _, w := range s.workers {
		cmd := exec.CommandContext(ctx, "docker", "cp", out, w+":"+criTimes)
		if o, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("docker cp %s %s:%s: %w: %s", out, w, criTimes, err, o)
		}
	}
	return nil
}

// podTimes reads the runtime's times of pod, which has started all its
// containers.
func (s *scenario) podTimes(ctx context.Context, pod *corev1.Pod) (*podTimes, error) {
	raw, err := s.onNode(ctx, pod.Spec.NodeName, criTimes, string(pod.UID))
	if err != nil {
		return nil, err
	}
	var t struct {
		Sandbox    time.Time        `json:"sandbox"`
		Containers []containerTimes `json:"containers"`
	}
	if err := json.Unmarshal([]byte(raw), &t); err != nil {
		return nil, fmt.Errorf("launcher Pod %s: cri-times: %w", pod.Name, err)
	}
	byID := map[string]containerTimes{}
	for _, c := range t.Containers {
		byID[c.ID] = c
	}
	pt := &podTimes{Sandbox: t.Sandbox}
	sidecar := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		sidecar[c.Name] = c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
	}
	for _, st := range pod.Status.InitContainerStatuses {
		if !sidecar[st.Name] {
			continue
		}
		c, ok := byID[containerID(st)]
		if !ok {
			return nil, fmt.Errorf("launcher Pod %s: the runtime has no container %s (%s)", pod.Name, st.Name, containerID(st))
		}
		pt.Sidecars = append(pt.Sidecars, c)
	}
	slices.SortFunc(pt.Sidecars, func(a, b containerTimes) int { return a.Created.Compare(b.Created) })
	for _, st := range pod.Status.ContainerStatuses {
		if c, ok := byID[containerID(st)]; ok && st.Name == "compute" {
			pt.Compute = c
		}
	}
	if pt.Compute.Started.IsZero() {
		return nil, fmt.Errorf("launcher Pod %s: no start time of compute from the runtime", pod.Name)
	}
	return pt, nil
}

// nodeCPU is the CPU time all of node's processes have used: the node
// container's cgroup, read on this machine (cgroup v1's cpuacct.usage or
// v2's cpu.stat).
func nodeCPU(ctx context.Context, node string) (time.Duration, error) {
	out, err := exec.CommandContext(ctx, "docker", "inspect", "-f", "{{.Id}}", node).Output()
	if err != nil {
		return 0, fmt.Errorf("docker inspect %s: %w", node, err)
	}
	id := strings.TrimSpace(string(out))
	for _, c := range []struct{ root, file string }{{"/sys/fs/cgroup/cpuacct", "cpuacct.usage"}, {"/sys/fs/cgroup", "cpu.stat"}} {
		var found string
		_ = filepath.WalkDir(c.root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || found != "" {
				return fs.SkipDir
			}
			if d.IsDir() && strings.Contains(d.Name(), id) {
				found = p
				return fs.SkipAll
			}
			return nil
		})
		if found == "" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(found, c.file))
		if err != nil {
			return 0, err
		}
		return parseCPU(c.file, string(data))
	}
	return 0, fmt.Errorf("no CPU accounting found for the container of node %s (%s)", node, id)
}

// parseCPU reads cgroup v1's cpuacct.usage (ns) or v2's cpu.stat
// (usage_usec).
func parseCPU(file, data string) (time.Duration, error) {
	if file == "cpuacct.usage" {
		ns, err := strconv.ParseInt(strings.TrimSpace(data), 10, 64)
		return time.Duration(ns), err
	}
	for l := range strings.SplitSeq(data, "\n") {
		if v, ok := strings.CutPrefix(l, "usage_usec "); ok {
			us, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return time.Duration(us) * time.Microsecond, err
		}
	}
	return 0, fmt.Errorf("no usage_usec in %s", file)
}

// machineBusy is the CPU time this machine's processors have been busy,
// from /proc/stat: every state but idle and iowait.
func machineBusy() (time.Duration, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: %q", line)
	}
	var busy int64
	for i, v := range f[1:8] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, err
		}
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	const userHZ = 100
	return time.Duration(busy) * time.Second / userHZ, nil
}

// kubeletWorkingSets reads the kubelet's summary of node: each container's
// working set, by "<pod>/<container>".
func (s *scenario) kubeletWorkingSets(ctx context.Context, node string) (map[string]int64, error) {
	raw, err := s.kubectl(ctx, "", "get", "--raw", "/api/v1/nodes/"+node+"/proxy/stats/summary")
	if err != nil {
		return nil, err
	}
	var sum struct {
		Pods []struct {
			PodRef struct {
				Name string `json:"name"`
			} `json:"podRef"`
			Containers []struct {
				Name   string `json:"name"`
				Memory struct {
					WorkingSetBytes *int64 `json:"workingSetBytes"`
				} `json:"memory"`
			} `json:"containers"`
		} `json:"pods"`
	}
	if err := json.Unmarshal([]byte(raw), &sum); err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, p := range sum.Pods {
		for _, c := range p.Containers {
			if c.Memory.WorkingSetBytes != nil {
				out[p.PodRef.Name+"/"+c.Name] = *c.Memory.WorkingSetBytes
			}
		}
	}
	return out, nil
}
