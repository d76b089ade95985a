// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt-plugins/framework/tests/framework/guest"
)

// idleSettle is how long the sidecars are left alone before their memory
// is read "idle".
const idleSettle = 15 * time.Second

// sidecarIDs gives the runtime IDs of pod's sidecar containers by name.
func sidecarIDs(pod *corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, st := range pod.Status.InitContainerStatuses {
		if id := containerID(st); id != "" {
			out[st.Name] = id
		}
	}
	return out
}

// readSidecarMemory reads the memory of pod's sidecars, from their cgroups
// and from the kubelet's summary, as readings named when.
func (b *bench) readSidecarMemory(ctx context.Context, pod *corev1.Pod, when string) ([]memReading, error) {
	if err := b.c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
		return nil, err
	}
	ids := sidecarIDs(pod)
	stats, err := b.cgroupMemory(ctx, pod.Spec.NodeName, slices.Collect(maps.Values(ids)))
	if err != nil {
		return nil, err
	}
	kubelet, err := b.kubeletWorkingSets(ctx, pod.Spec.NodeName)
	if err != nil {
		return nil, err
	}
	names := slices.Sorted(maps.Keys(ids))
	out := make([]memReading, 0, len(names))
	for _, n := range names {
		r := memReading{when: when, sidecar: n, mem: stats[ids[n]], kubelet: -1}
		if ws, ok := kubelet[pod.Name+"/"+n]; ok {
			r.kubelet = ws
		}
		out = append(out, r)
	}
	return out, nil
}

// memory boots one VM with every sample's sidecar, the Python sample's
// too, reads each sidecar's memory once it has been idle after the boot,
// migrates the VM to the other worker and reads the target Pod's sidecars
// after the migration's calls.
func (b *bench) memory(ctx context.Context) error {
	labels := templateLabels()
	labels["plugins.example.com/"+pythonSample] = "enabled"
	vmis, pods, _, err := b.bootVMs(ctx, "bench-mem", b.workers[0], []map[string]string{labels})
	if err != nil {
		return err
	}
	vmi, source := vmis[0], pods[0]
	if err := b.waitRunning(ctx, vmis, 4*time.Minute); err != nil {
		b.dumpPods(ctx, vmNamespace)
		return err
	}
	tl, err := readTimeline(vmi)
	if err == nil {
		err = checkTimeline(tl, append(slices.Clone(scenarioHooks), hookWant{"GuestDefinition", pythonSample, "sidecar"}))
	}
	b.Check("the VM booted with the three Go sample sidecars and the Python one, each hook run", err == nil, "%s", errText(err))
	if _, err := b.waitGuest(ctx, source, "the test guest's report", func(r guest.Report) (bool, string) { return r.Ready, "not yet" }); err != nil {
		return err
	}
	time.Sleep(idleSettle)
	idle, err := b.readSidecarMemory(ctx, source, "idle after boot")
	if err != nil {
		return err
	}
	target := newLauncherPod(vmi, "tgt", b.workers[1])
	if err := b.c.Create(ctx, target); err != nil {
		return err
	}
	if err := b.waitContainers(ctx, target); err != nil {
		return err
	}
	if err := b.c.Get(ctx, client.ObjectKeyFromObject(source), source); err != nil {
		return err
	}
	sourceDone := make(chan []memReading, 1)
	go func() { sourceDone <- b.watchSourceSidecars(ctx, source) }()
	if err := b.startMigration(ctx, vmi, "bench-migration", b.workers[0], target); err != nil {
		return err
	}
	err = b.waitMigration(ctx, vmi)
	ok := err == nil && vmi.Status.MigrationState.Completed && !vmi.Status.MigrationState.Failed
	if !b.Check("the VM migrated to "+b.workers[1], ok, "%s", errText(err)) {
		return errCheckFailed
	}
	sourceAfter := <-sourceDone
	time.Sleep(idleSettle)
	after, err := b.readSidecarMemory(ctx, target, "on the target, after the migration")
	if err != nil {
		return err
	}
	b.figures.Memory = append(b.figures.Memory, idle...)
	b.figures.Memory = append(b.figures.Memory, sourceAfter...)
	b.figures.Memory = append(b.figures.Memory, after...)
	b.Check("each source sidecar's memory read after its launcher left (PreMigrationSource and the migration done), before it ended",
		len(sourceAfter) == 4, "%d of 4 read in that window", len(sourceAfter))
	for _, m := range slices.Concat(idle, sourceAfter, after) {
		b.Show(fmt.Sprintf("%s, %s: working set %s MiB (kubelet: %s MiB), anon %s MiB, file %s MiB, peak %s MiB", m.when, m.sidecar,
			mib(m.mem.WorkingSet()), mib(m.kubelet), mib(m.mem.Anon), mib(m.mem.File), mib(m.mem.Peak)))
	}
	b.Check("every sidecar's memory read in the source Pod and in the target Pod", len(idle) == 4 && len(after) == 4,
		"%d and %d readings", len(idle), len(after))
	return b.stopVMs(ctx, vmis, []*corev1.Pod{source, target})
}

// watchSourceSidecars reads the cgroups of the migration source Pod's
// sidecars and compute over and over, from before the migration until the
// sidecars have ended. compute's cgroup goes when the launcher exits,
// which it does once PreMigrationSource has run and the domain has left;
// the kubelet stops the sidecars after that. Each sidecar's last reading
// taken after compute was gone is returned: its memory after the calls of
// a boot and of a migration.
func (b *bench) watchSourceSidecars(ctx context.Context, source *corev1.Pod) []memReading {
	ids := sidecarIDs(source)
	var compute string
	for _, st := range source.Status.ContainerStatuses {
		if st.Name == "compute" {
			compute = containerID(st)
		}
	}
	all := append(slices.Collect(maps.Values(ids)), compute)
	last := map[string]memStat{}
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		stats, err := b.cgroupMemoryOrGone(ctx, source.Spec.NodeName, all)
		if err == nil && stats[compute].Gone {
			alive := 0
			for _, id := range ids {
				if m := stats[id]; !m.Gone {
					last[id] = m
					alive++
				}
			}
			if alive == 0 {
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	var out []memReading
	for _, name := range slices.Sorted(maps.Keys(ids)) {
		if m, ok := last[ids[name]]; ok {
			out = append(out, memReading{when: "on the source, after PreMigrationSource and the migration", sidecar: name, mem: m, kubelet: -1})
		}
	}
	return out
}

// dispatchLine is the handler's log line of one node hook dispatch.
var dispatchLine = regexp.MustCompile(`"msg"="node hooks dispatched" "hookPoint"="([^"]+)" "vmi"="([^"]+)" "took"="([^"]+)"`)

// parseDispatches reads the dispatch durations of the VMIs whose name
// begins with prefix from the handler's log, by hook point.
func parseDispatches(log, prefix string) map[string][]time.Duration {
	out := map[string][]time.Duration{}
	for _, m := range dispatchLine.FindAllStringSubmatch(log, -1) {
		_, name, _ := strings.Cut(m[2], "/")
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		if d, err := time.ParseDuration(m[3]); err == nil {
			out[m[1]] = append(out[m[1]], d)
		}
	}
	return out
}

// nodesCPU reads the CPU time of every node.
func (b *bench) nodesCPU(ctx context.Context, nodes *corev1.NodeList) (map[string]time.Duration, error) {
	out := map[string]time.Duration{}
	for _, n := range nodes.Items {
		c, err := b.nodeCPU(ctx, n.Name)
		if err != nil {
			return nil, err
		}
		out[n.Name] = c
	}
	return out, nil
}

// handlerPod is the virt-handler stand-in's Pod on node.
func (b *bench) handlerPod(ctx context.Context, node string) (*corev1.Pod, error) {
	var pods corev1.PodList
	if err := b.c.List(ctx, &pods, client.InNamespace(standinNamespace), client.MatchingLabels{"app.kubernetes.io/name": "virt-handler-standin"}); err != nil {
		return nil, err
	}
	for i := range pods.Items {
		if pods.Items[i].Spec.NodeName == node && pods.Items[i].Status.Phase == corev1.PodRunning {
			return &pods.Items[i], nil
		}
	}
	return nil, fmt.Errorf("no running virt-handler stand-in on %s", node)
}

// density boots opts.Density VMs with every sample plugin at once on the
// first worker.
func (b *bench) density(ctx context.Context) error {
	node := b.workers[0]
	n := b.opts.Density
	d := &denseFigures{n: n, node: node, perVM: map[string]int64{}, anonPerVM: map[string]int64{}}
	b.figures.Dense = d
	labels := make([]map[string]string, n)
	for i := range labels {
		labels[i] = templateLabels()
	}
	prefix := fmt.Sprintf("bench-dense-%d", time.Now().Unix()%100000)
	var nodeList corev1.NodeList
	if err := b.c.List(ctx, &nodeList); err != nil {
		return err
	}
	cpu0, err := b.nodesCPU(ctx, &nodeList)
	if err != nil {
		return err
	}
	busy0, err := machineBusy()
	if err != nil {
		return err
	}
	start := time.Now()
	vmis, pods, created, err := b.bootVMs(ctx, prefix, node, labels)
	if err != nil {
		return err
	}
	err = b.waitRunning(ctx, vmis, 15*time.Minute)
	wall := time.Since(start)
	cpu1, cerr := b.nodesCPU(ctx, &nodeList)
	busy1, berr := machineBusy()
	cerr = errors.Join(cerr, berr)
	if !b.Check(fmt.Sprintf("all %d VMIs Running", n), err == nil && cerr == nil, "after %s%s", wall.Round(time.Second), errSuffix(err)) {
		b.dumpPods(ctx, vmNamespace)
		return errCheckFailed
	}
	d.wall, d.machine = wall, busy1-busy0
	d.nodeCPU = map[string]time.Duration{}
	for n, c := range cpu1 {
		d.nodeCPU[n] = c - cpu0[n]
	}
	var bad []string
	for i, vmi := range vmis {
		bs, err := b.sample(ctx, "dense", vmi, pods[i], created[i])
		if err == nil {
			err = checkTimeline(&bs.Timeline, scenarioHooks)
		}
		if err != nil {
			bad = append(bad, vmi.Name+": "+err.Error())
			continue
		}
		d.boots = append(d.boots, bs)
	}
	b.Check("every boot ran every hook, none waited out its socket or timed out", len(bad) == 0, "%s", strings.Join(bad, "; "))
	bad = nil
	for i, vmi := range vmis {
		dom, state, err := b.domain(ctx, pods[i], vmi)
		switch {
		case err != nil:
			bad = append(bad, vmi.Name+": "+err.Error())
		case state != "running":
			bad = append(bad, vmi.Name+": domain "+state)
		default:
			if miss := domainMisses(dom, vmi); len(miss) > 0 {
				bad = append(bad, vmi.Name+": "+strings.Join(miss, ", "))
				continue
			}
			d.domainsOK++
		}
	}
	b.Check(fmt.Sprintf("libvirt runs each of the %d domains with every plugin's change", n), len(bad) == 0, "%s", strings.Join(bad, "; "))
	bad = nil
	guestStart := time.Now()
	for i, vmi := range vmis {
		r, err := b.waitGuest(ctx, pods[i], "the guest of "+vmi.Name, func(r guest.Report) (bool, string) { return r.Ready, "not yet" })
		if err != nil {
			bad = append(bad, vmi.Name+": "+err.Error())
			continue
		}
		if miss := guestMisses(r); len(miss) > 0 {
			bad = append(bad, vmi.Name+": "+strings.Join(miss, ", "))
			continue
		}
		d.guestsOK++
	}
	b.Check(fmt.Sprintf("each of the %d guests booted and saw every plugin's change", n), len(bad) == 0,
		"%d of %d within %s of the last VMI Running%s", d.guestsOK, n, time.Since(guestStart).Round(time.Second), joinSuffix(bad))
	time.Sleep(idleSettle)
	var ids []string
	owner := map[string]string{}
	for _, p := range pods {
		if err := b.c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		for name, id := range sidecarIDs(p) {
			ids = append(ids, id)
			owner[id] = name
		}
	}
	hp, err := b.handlerPod(ctx, node)
	if err != nil {
		return err
	}
	handlerID := containerID(hp.Status.ContainerStatuses[0])
	stats, err := b.cgroupMemory(ctx, node, append(ids, handlerID))
	if err != nil {
		return err
	}
	for _, id := range ids {
		d.perVM[owner[id]] += stats[id].WorkingSet()
		d.anonPerVM[owner[id]] += stats[id].Anon
	}
	for k := range d.perVM {
		d.perVM[k] /= int64(n)
		d.anonPerVM[k] /= int64(n)
	}
	d.handler = stats[handlerID]
	for _, name := range slices.Sorted(maps.Keys(d.perVM)) {
		b.Show(fmt.Sprintf("%s: %s MiB working set per VM, %s MiB anonymous", name, mib(d.perVM[name]), mib(d.anonPerVM[name])))
	}
	b.Show(fmt.Sprintf("virt-handler stand-in: working set %s MiB, peak %s MiB", mib(d.handler.WorkingSet()), mib(d.handler.Peak)))
	if err := b.stopVMs(ctx, vmis, pods); err != nil {
		return err
	}
	logs, err := b.kubectl(ctx, "", "-n", standinNamespace, "logs", hp.Name, "--since=1h")
	if err != nil {
		return err
	}
	d.dispatch = parseDispatches(logs, prefix)
	calls := 0
	for _, v := range d.dispatch {
		calls += len(v)
	}
	b.Check("the handler's log gives every node hook dispatch of the run's VMs (PreVMStart, PostVMStart, OnVMStop, PostVMStop)",
		calls == 4*n, "%d dispatches of %d VMs", calls, n)
	sum := summarize(d.boots)
	b.Show(fmt.Sprintf("per-VM boot p50 %s, p95 %s; in the %s until all ran, the node used %.1f CPU-seconds and the machine was busy %.1f of the %.1f its %d cores had",
		ms(sum.total.median), ms(sum.total.p95), wall.Round(time.Second), d.nodeCPU[node].Seconds(), d.machine.Seconds(), float64(runtime.NumCPU())*wall.Seconds(), runtime.NumCPU()))
	return nil
}

func joinSuffix(list []string) string {
	if len(list) == 0 {
		return ""
	}
	return ": " + strings.Join(list, "; ")
}
