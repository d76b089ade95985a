// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"bufio"
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

// What the bench reads on a node: the container runtime's own times of a
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

func (p podTimes) sidecarNames() []string {
	var out []string
	for _, c := range p.Sidecars {
		out = append(out, c.Name)
	}
	slices.Sort(out)
	return out
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
func (b *bench) installCRITimes(ctx context.Context) error {
	out := filepath.Join(b.root, "bin", "cri-times")
	if err := gobuild.Static("tests", "./cluster/cmd/cri-times", out); err != nil {
		return err
	}
	for _, w := range b.workers {
		cmd := exec.CommandContext(ctx, "docker", "cp", out, w+":"+criTimes)
		if o, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("docker cp %s %s:%s: %w: %s", out, w, criTimes, err, o)
		}
	}
	return nil
}

// podTimes reads the runtime's times of pod, which has started all its
// containers.
func (b *bench) podTimes(ctx context.Context, pod *corev1.Pod) (*podTimes, error) {
	raw, err := b.onNode(ctx, pod.Spec.NodeName, criTimes, string(pod.UID))
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
	for _, st := range pod.Status.InitContainerStatuses {
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

// memStat is a cgroup's memory in bytes: its usage, its peak, and the
// lines of memory.stat read here.
type memStat struct {
	Current, Peak                        int64
	Anon, File, ActiveFile, InactiveFile int64
	// Gone is set when the container's cgroup is no more (it ended).
	Gone bool
}

// WorkingSet is the kubelet's working set: usage less the inactive file
// pages, which the kernel takes back first.
func (m memStat) WorkingSet() int64 { return max(m.Current-m.InactiveFile, 0) }

// cgroupMemory reads the memory of the containers ids on node, each from
// the cgroup the runtime made for it, on cgroup v1 (the memory
// controller's hierarchy: memory.usage_in_bytes, memory.max_usage_in_bytes,
// rss and cache in memory.stat) or v2 (memory.current, memory.peak, anon
// and file). The script prints, per container, a header line, the version,
// the usage, the peak (-1 where the kernel has none) and memory.stat.
func (b *bench) cgroupMemory(ctx context.Context, node string, ids []string) (map[string]memStat, error) {
	return b.readCgroups(ctx, node, ids, false)
}

// cgroupMemoryOrGone is cgroupMemory where a container whose cgroup is
// gone (it ended) is read as Gone instead of failing the read.
func (b *bench) cgroupMemoryOrGone(ctx context.Context, node string, ids []string) (map[string]memStat, error) {
	return b.readCgroups(ctx, node, ids, true)
}

func (b *bench) readCgroups(ctx context.Context, node string, ids []string, goneOK bool) (map[string]memStat, error) {
	script := `if [ -d /sys/fs/cgroup/memory ]; then
  v=1 base=/sys/fs/cgroup/memory cur=memory.usage_in_bytes peak=memory.max_usage_in_bytes
else
  v=2 base=/sys/fs/cgroup cur=memory.current peak=memory.peak
fi
for id in "$@"; do
  d=$(find "$base" -type d -name "*${id}*" -print -quit)
  if [ -z "$d" ]; then
    [ -n "$KVP_GONE_OK" ] || { echo "no cgroup for $id under $base" >&2; exit 1; }
    echo "== $id"; echo "gone 1"; continue
  fi
  echo "== $id"
  echo "version $v"
  echo "current $(cat "$d/$cur")"
  echo "peak $(cat "$d/$peak" 2>/dev/null || echo -1)"
  cat "$d/memory.stat"
done`
	env := "KVP_GONE_OK="
	if goneOK {
		env += "1"
	}
	out, err := b.onNode(ctx, node, append([]string{"env", env, "sh", "-c", script, "sh"}, ids...)...)
	if err != nil {
		return nil, err
	}
	return parseCgroupMemory(out)
}

func parseCgroupMemory(out string) (map[string]memStat, error) {
	stats := map[string]memStat{}
	var id string
	var m memStat
	v1 := false
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == "==" {
			if id != "" {
				stats[id] = m
			}
			id, m, v1 = f[1], memStat{}, false
			continue
		}
		if len(f) != 2 || id == "" {
			continue
		}
		v, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("cgroup of %s: %q: %w", id, sc.Text(), err)
		}
		switch key := f[0]; {
		case key == "version":
			v1 = v == 1
		case key == "gone":
			m.Gone = v == 1
		case key == "current":
			m.Current = v
		case key == "peak":
			m.Peak = v
		case key == "anon" && !v1, key == "rss" && v1:
			m.Anon = v
		case key == "file" && !v1, key == "cache" && v1:
			m.File = v
		case key == "active_file":
			m.ActiveFile = v
		case key == "inactive_file":
			m.InactiveFile = v
		}
	}
	if id != "" {
		stats[id] = m
	}
	if len(stats) == 0 {
		return nil, fmt.Errorf("no cgroup read in %q", out)
	}
	return stats, nil
}

// nodeCPU is the CPU time all of node's processes have used: the node
// container's cgroup, read on this machine (cgroup v1's cpuacct.usage or
// v2's cpu.stat).
func (b *bench) nodeCPU(ctx context.Context, node string) (time.Duration, error) {
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
func (b *bench) kubeletWorkingSets(ctx context.Context, node string) (map[string]int64, error) {
	raw, err := b.kubectl(ctx, "", "get", "--raw", "/api/v1/nodes/"+node+"/proxy/stats/summary")
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
