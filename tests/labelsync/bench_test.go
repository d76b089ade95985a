// SPDX-License-Identifier: Apache-2.0

package labelsync

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt-plugins/framework/label-syncer/syncer"
	"github.com/kubevirt-plugins/framework/label-syncer/syncmetrics"
	"github.com/kubevirt-plugins/framework/tests/framework/poll"
)

// BenchmarkLabelSync creates LABELSYNC_BENCH_VMS (default 5000) VMs, each
// with a VMI and a launcher Pod shaped like a real one, then for each Pod
// watch mode starts a syncer and measures:
//
//   - initial-writes: writes while it syncs objects already in line (want
//     0), initial-events the events then (0; 1 in the second mode, whose
//     templates still hold the refused key of the first)
//   - heap-MiB: heap in use after GC with its caches filled, over the
//     process's heap before it started
//   - converge-s: from the first template change until every VMI and Pod
//     carries the new label, changing the template of every VM
//   - vmi-writes/VM, pod-writes/VM: successful patches per VM (want 1 each)
//   - event-writes/VM, other-writes/VM: any other write per VM (want 0)
//   - refused/VM: patches refused by their test (stale cache) per VM
//   - steady-writes: writes in the 5 s after all syncs settled (want 0)
//   - then every template changes again and gains a label value no VMI can
//     take (one misconfigured key on every VM): bad-converge-s,
//     bad-vmi-writes/VM, bad-pod-writes/VM as above, and bad-key-events,
//     the events written for it (the bound: one per problem per
//     syncevents.DefaultInterval, so 1)
//
// Writes are counted by a RoundTripper on the syncer's rest.Config, events
// apart. Run it alone, once:
//
//	go test -run '^$' -bench BenchmarkLabelSync -benchtime 1x -timeout 60m ./labelsync/
func BenchmarkLabelSync(b *testing.B) {
	n := 5000
	if v := os.Getenv("LABELSYNC_BENCH_VMS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("LABELSYNC_BENCH_VMS=%q: want a positive number", v)
		}
	}
	admin := adminClient(b)
	ns := newNamespace(b)
	start := time.Now()
	if err := forEach(n, 16, func(i int) error { return createRunningVM(b.Context(), admin, ns, i) }); err != nil {
		b.Fatalf("creating %d VMs, VMIs and Pods: %v", n, err)
	}
	b.Logf("created %d VMs, %d VMIs and %d launcher Pods (with status) in %s", n, n, n, time.Since(start).Round(time.Second))

	gen := 0
	for _, mode := range []struct {
		name string
		opts []syncer.ManagerOption
	}{{"pods=metadata", nil}, {"pods=full", []syncer.ManagerOption{syncer.WithFullPodWatch()}}} {
		b.Run(mode.name, func(b *testing.B) {
			for range b.N {
				gen++
				benchOnce(b, mode.opts, admin, ns, n, gen)
			}
		})
	}
}

// waitLong polls check every 100ms, until a deadline sized for thousands
// of objects, and fails b with its last error after that.
func waitLong(b *testing.B, what string, check func() error) {
	b.Helper()
	if err := poll.Every(b.Context(), 100*time.Millisecond, 20*time.Minute, check); err != nil {
		b.Fatalf("%s: %v", what, err)
	}
}

func benchOnce(b *testing.B, mopts []syncer.ManagerOption, admin client.Client, ns string, n int, gen int) {
	b.StopTimer()
	writes := &writeCounter{}
	cfg := rest.CopyConfig(server.Config)
	cfg.QPS = -1
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return &countingTransport{next: rt, c: writes} }

	before := heapInUse()
	run := startSyncerWith(b, cfg, syncer.Options{
		Labels: mustFilter(b, "ops.example.com/*"),
	}, mopts, ns)
	// Every VMI and Pod synced once: the objects are already in line.
	waitSyncs(b, run, float64(n), float64(n))
	initial := writes.snapshot()
	heap := heapInUse() - before

	b.StartTimer()
	routine := changeTemplates(b, run, writes, admin, ns, n, strconv.Itoa(gen), "")
	b.StopTimer()
	settled := writes.snapshot()
	time.Sleep(5 * time.Second)
	steady := writes.snapshot().minus(settled)

	// The same change once more, with a label value no VMI can take on
	// every VM: refused, the other key synced, one event.
	bad := changeTemplates(b, run, writes, admin, ns, n, strconv.Itoa(gen)+"-bad", `,"ops.example.com/bad":"not a label value!"`)
	// Events are written in the background; by the end of a steady window
	// they are.
	settled = writes.snapshot()
	time.Sleep(5 * time.Second)
	badEvents := writes.snapshot().minus(settled).events + bad.writes.events
	run.stop(b)

	perVM := func(x int) float64 { return float64(x) / float64(n) }
	b.ReportMetric(float64(initial.total()), "initial-writes")
	b.ReportMetric(float64(initial.events), "initial-events")
	b.ReportMetric(float64(heap)/(1<<20), "heap-MiB")
	b.ReportMetric(routine.converge.Seconds(), "converge-s")
	b.ReportMetric(routine.patched.Seconds(), "template-patch-s")
	b.ReportMetric(perVM(routine.writes.vmi), "vmi-writes/VM")
	b.ReportMetric(perVM(routine.writes.pod), "pod-writes/VM")
	b.ReportMetric(perVM(routine.writes.events), "event-writes/VM")
	b.ReportMetric(perVM(routine.writes.other), "other-writes/VM")
	b.ReportMetric(perVM(routine.writes.refused), "refused/VM")
	b.ReportMetric(float64(steady.total()+steady.events), "steady-writes")
	b.ReportMetric(bad.converge.Seconds(), "bad-converge-s")
	b.ReportMetric(perVM(bad.writes.vmi), "bad-vmi-writes/VM")
	b.ReportMetric(perVM(bad.writes.pod), "bad-pod-writes/VM")
	b.ReportMetric(perVM(bad.writes.other), "bad-other-writes/VM")
	b.ReportMetric(float64(badEvents), "bad-key-events")
	b.ReportMetric(run.counter(b, syncmetrics.MetricRefusedKeys, nil), "bad-key-refusals")
	b.Logf("%d VMs: initial writes %+v, change writes %+v, steady writes %+v, heap %.1f MiB, converged in %s (templates patched in %s); "+
		"with a refused key: writes %+v, %d events, converged in %s",
		n, initial, routine.writes, steady, float64(heap)/(1<<20), routine.converge.Round(time.Millisecond), routine.patched.Round(time.Millisecond),
		bad.writes, badEvents, bad.converge.Round(time.Millisecond))
}

// templateChange is what one change of every template cost.
type templateChange struct {
	// patched is the time the template patches took, converge the time
	// until every VMI and Pod carried the new label.
	patched, converge time.Duration
	// writes are the syncer's writes, from the first template patch until
	// every VMI and Pod was synced again after its own patch.
	writes writes
}

// changeTemplates sets ops.example.com/gen to gen (plus extraLabels, JSON
// members starting with a comma) in every VM's template, waits until every
// VMI and Pod carries it and the syncs the patches caused have run out, and
// returns the time and the writes.
func changeTemplates(b *testing.B, run *syncerRun, writes *writeCounter, admin client.Client, ns string, n int, gen, extraLabels string) templateChange {
	vmiSyncs := run.counter(b, syncmetrics.MetricSyncs, map[string]string{"target": syncmetrics.TargetVMI})
	podSyncs := run.counter(b, syncmetrics.MetricSyncs, map[string]string{"target": syncmetrics.TargetPod})
	before := writes.snapshot()
	t0 := time.Now()
	if err := forEach(n, 16, func(i int) error {
		vm := &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: vmName(i)}}
		patch := []byte(`{"spec":{"template":{"metadata":{"labels":{"ops.example.com/gen":"` + gen + `"` + extraLabels + `}}}}}`)
		return admin.Patch(b.Context(), vm, client.RawPatch("application/merge-patch+json", patch))
	}); err != nil {
		b.Fatalf("changing the templates: %v", err)
	}
	c := templateChange{patched: time.Since(t0)}
	waitLabelled(b, admin, ns, n, gen)
	c.converge = time.Since(t0)
	// Let the reconciles the writes themselves caused run out.
	waitSyncs(b, run, vmiSyncs+float64(n), podSyncs+float64(n))
	c.writes = writes.snapshot().minus(before)
	return c
}

// waitSyncs waits until the syncer finished at least vmi VMI syncs and pod
// Pod syncs.
func waitSyncs(b *testing.B, run *syncerRun, vmi, pod float64) {
	b.Helper()
	waitLong(b, "syncs done", func() error {
		gotVMI := run.counter(b, syncmetrics.MetricSyncs, map[string]string{"target": syncmetrics.TargetVMI})
		gotPod := run.counter(b, syncmetrics.MetricSyncs, map[string]string{"target": syncmetrics.TargetPod})
		if gotVMI < vmi || gotPod < pod {
			return fmt.Errorf("VMI syncs %v of %v, Pod syncs %v of %v", gotVMI, vmi, gotPod, pod)
		}
		return nil
	})
}

// waitLabelled waits until all n VMIs and n Pods carry ops.example.com/gen=gen.
func waitLabelled(b *testing.B, c client.Client, ns string, n int, gen string) {
	b.Helper()
	waitLong(b, "every VMI and Pod carries the new label", func() error {
		for _, kind := range []string{"VirtualMachineInstanceList", "PodList"} {
			list := &metav1.PartialObjectMetadataList{}
			gv := corev1.SchemeGroupVersion
			if kind == "VirtualMachineInstanceList" {
				gv = kubevirtv1.SchemeGroupVersion
			}
			list.SetGroupVersionKind(gv.WithKind(kind))
			if err := c.List(b.Context(), list, client.InNamespace(ns), client.MatchingLabels{"ops.example.com/gen": gen}); err != nil {
				return err
			}
			if len(list.Items) < n {
				return fmt.Errorf("%d of %d %s items labelled", len(list.Items), n, kind)
			}
		}
		return nil
	})
}

func heapInUse() int64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

func adminClient(b *testing.B) client.Client {
	b.Helper()
	cfg := rest.CopyConfig(server.Config)
	cfg.QPS = -1
	c, err := client.New(cfg, client.Options{Scheme: server.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// forEach runs f(0..n-1) on workers goroutines and returns the first error.
func forEach(n, workers int, f func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

func vmName(i int) string { return fmt.Sprintf("vm-%05d", i) }

// createRunningVM creates VM i, its VMI and a launcher Pod with status,
// their metadata in line with the template.
func createRunningVM(ctx context.Context, c client.Client, ns string, i int) error {
	labels := map[string]string{"ops.example.com/vm-id": vmName(i), "ops.example.com/gen": "0", "app": "bench"}
	vm := vmObject(ns, vmName(i), labels, map[string]string{"notes.example.com/owner": "team-bench"})
	if err := c.Create(ctx, vm); err != nil {
		return err
	}
	vmiLabels := map[string]string{"kubevirt.io/nodeName": "node01"}
	maps.Copy(vmiLabels, labels)
	vmi := vmiObject(vm, vmiLabels, map[string]string{"kubevirt.io/latest-observed-api-version": "v1"})
	if err := c.Create(ctx, vmi); err != nil {
		return err
	}
	pod := launcherPodObject(vmi, vmiLabels, map[string]string{"kubevirt.io/domain": vm.Name, "post.hook.backup.velero.io/command": `["/usr/bin/virt-freezer", "--unfreeze"]`})
	pod.Spec = launcherPodSpec(vm.Name)
	if err := c.Create(ctx, pod); err != nil {
		return err
	}
	pod.Status = launcherPodStatus()
	return c.Status().Update(ctx, pod)
}

// launcherPodSpec returns a Pod spec shaped like a virt-launcher Pod's: a
// compute container with its resources, mounts and probe, a console log
// container, two init containers, a dozen volumes, node affinity and
// tolerations. Its size, not its content, matters here.
func launcherPodSpec(vmName string) corev1.PodSpec {
	res := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("2294Mi"),
			"devices.kubevirt.io/kvm": resource.MustParse("1"), "devices.kubevirt.io/tun": resource.MustParse("1"),
			"devices.kubevirt.io/vhost-net": resource.MustParse("1"), corev1.ResourceEphemeralStorage: resource.MustParse("50M"),
		},
		Limits: corev1.ResourceList{
			"devices.kubevirt.io/kvm": resource.MustParse("1"), "devices.kubevirt.io/tun": resource.MustParse("1"),
			"devices.kubevirt.io/vhost-net": resource.MustParse("1"),
		},
	}
	var mounts []corev1.VolumeMount
	var volumes []corev1.Volume
	for _, v := range []string{"private", "public", "sockets", "virt-bin-share-dir", "libvirt-runtime", "ephemeral-disks", "container-disks", "hotplug-disks", "hotplug-disks-private", "cloudinitdisk-udata", "sidecar-sockets", "kubevirt-plugin-sockets"} {
		mounts = append(mounts, corev1.VolumeMount{Name: v, MountPath: "/var/run/kubevirt/" + v})
		volumes = append(volumes, corev1.Volume{Name: v, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	var env []corev1.EnvVar
	for _, e := range []string{"XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR", "POD_NAME", "KUBEVIRT_RESOURCE_NAME_" + strings.ToUpper(strings.ReplaceAll(vmName, "-", "_"))} {
		env = append(env, corev1.EnvVar{Name: e, Value: "/var/run/kubevirt-private/" + strings.ToLower(e)})
	}
	nonRoot := true
	user := int64(107)
	secCtx := &corev1.SecurityContext{
		RunAsNonRoot: &nonRoot, RunAsUser: &user,
		Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE"}, Drop: []corev1.Capability{"ALL"}},
	}
	return corev1.PodSpec{
		InitContainers: []corev1.Container{
			{Name: "container-disk-binary", Image: "virt-launcher:bench", Command: []string{"/usr/bin/cp", "/usr/bin/container-disk", "/init/usr/bin/container-disk"}, VolumeMounts: mounts[:2], SecurityContext: secCtx},
			{Name: "volumecontainerdisk-init", Image: "containerdisk:bench", Command: []string{"/usr/bin/container-disk"}, Args: []string{"--no-op"}, VolumeMounts: mounts[5:7], SecurityContext: secCtx},
		},
		Containers: []corev1.Container{
			{
				Name: "compute", Image: "virt-launcher:bench",
				Command:      []string{"/usr/bin/virt-launcher-monitor", "--qemu-timeout", "323s", "--name", vmName, "--uid", "00000000-0000-0000-0000-000000000000", "--namespace", "bench", "--kubevirt-share-dir", "/var/run/kubevirt", "--ephemeral-disk-dir", "/var/run/kubevirt-ephemeral-disks", "--container-disk-dir", "/var/run/kubevirt/container-disks", "--grace-period-seconds", "45", "--hook-sidecars", "0", "--ovmf-path", "/usr/share/OVMF", "--run-as-nonroot"},
				Env:          env,
				Resources:    res,
				VolumeMounts: mounts,
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:        corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/var/run/kubevirt-infra/healthy"}}},
					InitialDelaySeconds: 4, PeriodSeconds: 1, TimeoutSeconds: 5, FailureThreshold: 5,
				},
				SecurityContext: secCtx,
			},
			{Name: "guest-console-log", Image: "virt-launcher:bench", Command: []string{"/usr/bin/virt-tail"}, Args: []string{"--logfile", "/var/run/kubevirt-private/console.log"}, VolumeMounts: mounts[:1], SecurityContext: secCtx},
		},
		Volumes:       volumes,
		NodeSelector:  map[string]string{"kubevirt.io/schedulable": "true", "cpu-vendor.node.kubevirt.io/Intel": "true", "cpu-model.node.kubevirt.io/Skylake-Client-IBRS": "true"},
		Tolerations:   []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}, {Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
		Hostname:      vmName,
		RestartPolicy: corev1.RestartPolicyNever,
		Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "node-role.kubernetes.io/worker", Operator: corev1.NodeSelectorOpExists}}}},
		}}},
	}
}

// launcherPodStatus returns the status of a running launcher Pod.
func launcherPodStatus() corev1.PodStatus {
	now := metav1.Now()
	var conds []corev1.PodCondition
	for _, c := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady, "kubevirt.io/virtual-machine-unpaused"} {
		conds = append(conds, corev1.PodCondition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	var statuses []corev1.ContainerStatus
	for _, c := range []string{"compute", "guest-console-log"} {
		statuses = append(statuses, corev1.ContainerStatus{
			Name: c, Ready: true, Image: "virt-launcher:bench", ImageID: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			ContainerID: "containerd://0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	return corev1.PodStatus{
		Phase: corev1.PodRunning, Conditions: conds, ContainerStatuses: statuses,
		HostIP: "10.0.0.1", PodIP: "10.244.1.17", PodIPs: []corev1.PodIP{{IP: "10.244.1.17"}}, QOSClass: corev1.PodQOSBurstable, StartTime: &now,
	}
}

// writeCounter counts the syncer's writes by target.
type writeCounter struct {
	mu sync.Mutex
	w  writes
}

type writes struct {
	vmi, pod, events, other, refused int
}

func (w writes) total() int { return w.vmi + w.pod + w.other + w.refused }

func (w writes) minus(o writes) writes {
	return writes{w.vmi - o.vmi, w.pod - o.pod, w.events - o.events, w.other - o.other, w.refused - o.refused}
}

func (c *writeCounter) snapshot() writes {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.w
}

// countingTransport counts mutating requests: successful VMI and Pod
// patches, refused ones, events, and anything else.
type countingTransport struct {
	next http.RoundTripper
	c    *writeCounter
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if req.Method == http.MethodGet {
		return resp, err
	}
	ok := err == nil && resp.StatusCode < 300
	p := req.URL.Path
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	switch {
	case strings.Contains(p, "/events"):
		t.c.w.events++
	case !ok:
		t.c.w.refused++
	case req.Method == http.MethodPatch && strings.Contains(p, "/virtualmachineinstances/"):
		t.c.w.vmi++
	case req.Method == http.MethodPatch && strings.Contains(p, "/pods/"):
		t.c.w.pod++
	default:
		t.c.w.other++
	}
	return resp, err
}
