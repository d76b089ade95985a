// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt-plugins/framework/tests/framework/repo"
	"github.com/kubevirt-plugins/framework/tests/framework/transcript"
)

// KubeVirtBenchOptions configure RunKubeVirtBench.
type KubeVirtBenchOptions struct {
	// Out receives the transcript (default os.Stdout), Log the scripts'
	// and kubectl's output (default io.Discard).
	Out, Log io.Writer
	// Report receives the figures as Markdown; nil: none.
	Report io.Writer
	// Boots is the number of boots of each case (default 10), the cases
	// of a build in turn; Density the number of VMs booted at once on one
	// worker (default 10).
	Boots, Density int
	// Keep leaves the cluster at the end.
	Keep bool
}

// RunKubeVirtBench boots VMs on KubeVirt v1.9.0 as released, with its
// in-tree alpha-1 CEL hook and without, then on the same cluster moved to
// the patched build, with the framework's launcher CEL hook making the
// same change, without any Plugin, and with the three Go sample sidecars;
// then boots Density VMs with the sidecars at once on one worker. For
// each boot: VM creation to Running as the user sees it, cut into its
// parts from the VMI's phases and the container runtime's own times of the
// launcher Pod; the framework's own hook time (virt-handler's series, the
// patched build only); each launcher container's and virt-handler's
// memory. Figures are reported, never asserted; the checks are that each
// boot got the change its case asks for.
func RunKubeVirtBench(ctx context.Context, opts KubeVirtBenchOptions) *transcript.Result {
	if opts.Out == nil {
		opts.Out = os.Stdout
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	opts.Boots = orDefault(opts.Boots, 10)
	opts.Density = orDefault(opts.Density, 10)
	r := transcript.New(opts.Out)
	r.StepTimeout = 60 * time.Minute
	root, err := repo.Root()
	if err != nil {
		return &transcript.Result{Err: err}
	}
	s := &scenario{Runner: r, env: newEnv(root, opts.Log), keep: opts.Keep}
	b := &kvBench{scenario: s, opts: opts, samples: map[string][]kvBoot{}, handler: map[string]int64{}}
	res := r.Run(ctx, []transcript.Step{
		{Title: "A kind cluster of three nodes from the node image built here", Run: s.startCluster},
		{Title: "KubeVirt v1.9.0 built as released and with kubevirt/patches, its images made from Debian packages", Run: s.buildKubeVirt},
		{Title: "KubeVirt as released, with an alpha-1 Plugin whose CEL hook sets the domain's title and description", Run: b.release},
		{Title: fmt.Sprintf("As released: %d boots with the alpha-1 CEL hook and %d without, in turn", opts.Boots, opts.Boots), Run: b.bootCases(releaseCases)},
		{Title: "Moved to the patched build; deploy/ and the framework's Plugin making the same change", Run: b.patched},
		{Title: fmt.Sprintf("Patched: %d boots with the launcher CEL hook and %d without any Plugin, in turn", opts.Boots, opts.Boots), Run: b.bootCases(patchedCases)},
		{Title: "The three Go sample sidecars injected by their policies", Run: b.applySidecars},
		{Title: fmt.Sprintf("Patched: %d boots with the three Go sample sidecars", opts.Boots), Run: b.bootCases(sidecarCases)},
		{Title: fmt.Sprintf("A node full of VMs: %d VMs with the three Go sample sidecars created at once on one worker", opts.Density), Run: b.density},
	})
	if opts.Report != nil {
		b.write(opts.Report)
	}
	return res
}

// orDefault is v, or def when v is not positive.
func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

type kvBench struct {
	*scenario
	opts    KubeVirtBenchOptions
	seq     int
	samples map[string][]kvBoot
	// handler is virt-handler's working set on each worker after each set
	// of boots, by "<last case>: <node>".
	handler map[string]int64
	dense   *kvDense
}

// kvBoot is what one boot measured.
type kvBoot struct {
	// created is when the VM's create was sent, seen when the VMI was
	// first seen in each phase (since created).
	created time.Time
	seen    map[kubevirtv1.VirtualMachineInstancePhase]time.Duration
	// pod are the runtime's times of the launcher Pod.
	pod podTimes
	// hooks is the framework's hook time the boot added to virt-handler's
	// series on its node: launcher hooks (reported by the launcher) and
	// node hooks; -1 where the build has no such series.
	hooks time.Duration
	// mem is each launcher container's working set once Running.
	mem map[string]int64
}

// kvItem is one part of a boot, on its path from the VM's create to the
// VMI Running.
type kvItem struct {
	name, who string
	took      time.Duration
}

// items cuts the boot into its parts, one after another, so that they add
// up to running: what KubeVirt's status says (the VMI's phases as polled)
// and what the runtime says (the launcher Pod's sandbox and containers).
func (k kvBoot) items() []kvItem {
	at := func(p kubevirtv1.VirtualMachineInstancePhase) time.Time { return k.created.Add(k.seen[p]) }
	var out []kvItem
	mark := k.created
	add := func(name, who string, to time.Time) {
		out = append(out, kvItem{name, who, to.Sub(mark)})
		mark = to
	}
	add("VM create to VMI Scheduling", "virt-controller", at(kubevirtv1.Scheduling))
	add("to the launcher Pod's sandbox", "scheduler, kubelet", k.pod.Sandbox)
	// The native sidecars: KubeVirt's guest-console-log, the first init
	// container, and the plugins' sidecars, which the injection appends
	// after KubeVirt's own init containers (the container disk binary, the
	// kernel boot volume).
	if n := len(k.pod.Sidecars); n > 0 {
		add("to the last native sidecar started", "kubelet: guest-console-log, KubeVirt's init containers before the plugins' sidecars", k.pod.Sidecars[n-1].Started)
	}
	add("to compute started", "kubelet: KubeVirt's init containers after the last native sidecar", k.pod.Compute.Started)
	add("compute started to VMI Scheduled", "virt-launcher, virt-controller", at(kubevirtv1.Scheduled))
	add("Scheduled to Running", "virt-handler, virt-launcher, libvirt; the hooks", k.created.Add(k.running()))
	return out
}

// kvCase is a VM's labels and what its domain must show.
type kvCase struct {
	name, build string
	labels      map[string]string
	// title: the domain must have the CEL hook's title (and none otherwise).
	title bool
	// smbios: smbios-watchdog's change must be there.
	smbios bool
}

const (
	benchCELLabel  = "bench.example.com/cel"
	benchCELPlugin = "bench-cel"
	benchCELExpr   = `Domain{Title: "VM " + vmi.Namespace + "/" + vmi.Name, Description: "tuned by a CEL hook"}`
)

var (
	releaseCases = []kvCase{
		{name: "alpha-1 CEL hook (release)", build: "release", labels: map[string]string{benchCELLabel: "on"}, title: true},
		{name: "no Plugin (release)", build: "release"},
	}
	patchedCases = []kvCase{
		{name: "launcher CEL hook (patched)", build: "patched", labels: map[string]string{benchCELLabel: "on"}, title: true},
		{name: "no Plugin (patched)", build: "patched"},
	}
	sidecarCases = []kvCase{
		{name: "three Go sample sidecars (patched)", build: "patched", labels: goSidecarLabels(), smbios: true},
	}
)

// goSidecarLabels are the labels that select the three Go samples (not
// cel-tuning, not the synced label).
func goSidecarLabels() map[string]string {
	l := templateLabels()
	delete(l, "plugins.example.com/cel-tuning")
	delete(l, syncedLabel)
	return l
}

// alpha1CELPlugin is the release's Plugin for the same change: its alpha-1
// domainHooks, with the same condition and expression.
const alpha1CELPlugin = `apiVersion: plugin.kubevirt.io/v1alpha1
kind: Plugin
metadata:
  name: ` + benchCELPlugin + `
spec:
  condition: '"` + benchCELLabel + `" in vmi.Labels'
  domainHooks:
  - cel:
      expression: '` + benchCELExpr + `'
`

// frameworkCELPlugin is the framework's.
const frameworkCELPlugin = `apiVersion: plugin.kubevirt.io/v1alpha1
kind: Plugin
metadata:
  name: ` + benchCELPlugin + `
spec:
  condition: '"` + benchCELLabel + `" in vmi.Labels'
  launcherHooks:
  - cel:
      hookPoint: GuestDefinition
      expression: '` + benchCELExpr + `'
`

func (b *kvBench) release(ctx context.Context) error {
	if err := b.installCRITimes(ctx); err != nil {
		return err
	}
	b.Show("cmd/cri-times on the workers, to read the runtime's own times of each launcher Pod")
	if err := b.kvDeploy(ctx, b.kv.release); err != nil {
		return err
	}
	if _, err := b.kubectl(ctx, alpha1CELPlugin, "apply", "-f", "-"); err != nil {
		return err
	}
	b.Show("alpha-1 Plugin " + benchCELPlugin + " applied: " + benchCELExpr)
	return nil
}

func (b *kvBench) patched(ctx context.Context) error {
	if err := b.kvDeploy(ctx, b.kv.tag); err != nil {
		return err
	}
	if err := b.deploy(ctx); err != nil {
		return err
	}
	if err := b.applyPlugin(ctx, "the framework's "+benchCELPlugin, frameworkCELPlugin); err != nil {
		return err
	}
	return b.waitHandlersHold(ctx, benchCELPlugin)
}

// applySidecars applies the three Go samples' policies and Plugins (not
// the node hook recorder: these boots have no node hook).
func (b *kvBench) applySidecars(ctx context.Context) error {
	var err error
	if b.sidecars, err = b.sampleSidecars(); err != nil {
		return err
	}
	for _, name := range samples {
		dir := b.injection.sampleDir(name)
		if _, err := b.kubectl(ctx, "", "apply", "-k", dir); err != nil {
			return err
		}
		b.Show("$ kubectl apply -k " + dir)
	}
	if err := b.waitInjection(ctx); err != nil {
		return err
	}
	return b.waitHandlersHold(ctx, "smbios-watchdog")
}

// waitHandlersHold waits until virt-handler on each worker has the
// launcher hook series of plugin: it holds the Plugin.
func (b *kvBench) waitHandlersHold(ctx context.Context, plugin string) error {
	for _, node := range b.workers {
		err := poll(ctx, "virt-handler on "+node+" to hold "+plugin, 3*time.Minute, func() (bool, string, error) {
			text, err := b.handlerMetrics(ctx, node)
			if err != nil {
				return false, err.Error(), nil
			}
			return strings.Contains(text, `plugin="`+plugin+`"`), "not yet", nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// bootCases boots each case b.opts.Boots times, the cases in turn.
func (b *kvBench) bootCases(cases []kvCase) func(context.Context) error {
	return func(ctx context.Context) error {
		for i := range b.opts.Boots {
			for _, c := range cases {
				sample, err := b.bootOnce(ctx, c)
				if err != nil {
					return fmt.Errorf("%s, boot %d: %w", c.name, i+1, err)
				}
				b.samples[c.name] = append(b.samples[c.name], sample)
			}
		}
		for _, c := range cases {
			st := durStats(runningTimes(b.samples[c.name]))
			b.Show(fmt.Sprintf("%s: creation to Running %s ms over %d boots", c.name, st, st.n))
		}
		var names []string
		for _, c := range cases {
			names = append(names, c.name)
		}
		b.recordHandlers(ctx, "after "+strings.Join(names, ", "))
		return nil
	}
}

// running is the boot's creation to Running.
func (k kvBoot) running() time.Duration { return k.seen[kubevirtv1.Running] }

func runningTimes(bs []kvBoot) []time.Duration {
	var out []time.Duration
	for _, s := range bs {
		out = append(out, s.running())
	}
	return out
}

// bootOnce creates a VM of case c, times it to Running, checks its domain,
// reads the launcher Pod's times, the memory and the hook time, and deletes
// it, waiting for its launcher Pod to go.
func (b *kvBench) bootOnce(ctx context.Context, c kvCase) (kvBoot, error) {
	b.seq++
	name := fmt.Sprintf("bench-%d", b.seq)
	before := map[string]float64{}
	if c.build == "patched" {
		for _, node := range b.workers {
			t, err := b.handlerHookSeconds(ctx, node)
			if err != nil {
				return kvBoot{}, err
			}
			before[node] = t
		}
	}
	sample := kvBoot{created: time.Now(), hooks: -1}
	if _, err := b.kubectl(ctx, benchVM(name, b.guestTag(c), "", c.labels), "create", "-f", "-"); err != nil {
		return kvBoot{}, err
	}
	seen, err := b.watchPhases(ctx, []string{name}, sample.created, 6*time.Minute)
	if err != nil {
		b.dumpPods(ctx, vmNamespace)
		return kvBoot{}, err
	}
	sample.seen = seen[0]
	vmi, pod, _, err := b.checkBenchVM(ctx, c, name)
	if err != nil {
		return kvBoot{}, err
	}
	pt, err := b.podTimes(ctx, pod)
	if err != nil {
		return kvBoot{}, err
	}
	sample.pod = *pt
	if sample.mem, err = b.podWorkingSets(ctx, pod); err != nil {
		return kvBoot{}, err
	}
	if c.build == "patched" {
		after, err := b.handlerHookSeconds(ctx, vmi.Status.NodeName)
		if err != nil {
			return kvBoot{}, err
		}
		sample.hooks = time.Duration((after - before[vmi.Status.NodeName]) * float64(time.Second))
	}
	if _, err := b.kubectl(ctx, "", "-n", vmNamespace, "delete", "vm", name, "--wait=true", "--timeout=3m"); err != nil {
		return kvBoot{}, err
	}
	return sample, b.waitPodGone(ctx, pod, 3*time.Minute)
}

// guestTag is the tag of the guest image of c's build.
func (b *kvBench) guestTag(c kvCase) string {
	if c.build == "release" {
		return b.kv.release
	}
	return b.kv.tag
}

// checkBenchVM checks that the running domain of VM name has the change
// case c asks for, and returns its VMI, its launcher Pod and whether the
// check passed.
func (b *kvBench) checkBenchVM(ctx context.Context, c kvCase, name string) (*kubevirtv1.VirtualMachineInstance, *corev1.Pod, bool, error) {
	vmi := &kubevirtv1.VirtualMachineInstance{}
	if err := b.c.Get(ctx, client.ObjectKey{Namespace: vmNamespace, Name: name}, vmi); err != nil {
		return nil, nil, false, err
	}
	pod, err := b.launcherPodOf(ctx, vmi)
	if err != nil {
		return nil, nil, false, err
	}
	d, _, err := b.kvDomain(ctx, pod, vmi)
	if err != nil {
		return nil, nil, false, err
	}
	wantTitle := ""
	if c.title {
		wantTitle = "VM " + vmNamespace + "/" + name
	}
	ok := b.Check(fmt.Sprintf("%s: %s got its change", c.name, name), d.Title == wantTitle &&
		(!c.smbios || smbiosEntry(d, "manufacturer") == "Example" && watchdogAction(d) == "reset"),
		"title %q (want %q), manufacturer %q, watchdog %q", d.Title, wantTitle, smbiosEntry(d, "manufacturer"), watchdogAction(d))
	return vmi, pod, ok, nil
}

// watchPhases reads the VMIs names every 100 ms until all are Running and
// returns, for each, when it was first seen in each phase after start.
func (b *kvBench) watchPhases(ctx context.Context, names []string, start time.Time, timeout time.Duration) ([]map[kubevirtv1.VirtualMachineInstancePhase]time.Duration, error) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(timeout)
	seen := make([]map[kubevirtv1.VirtualMachineInstancePhase]time.Duration, len(names))
	for i := range seen {
		seen[i] = map[kubevirtv1.VirtualMachineInstancePhase]time.Duration{}
	}
	phases := []kubevirtv1.VirtualMachineInstancePhase{kubevirtv1.Pending, kubevirtv1.Scheduling, kubevirtv1.Scheduled, kubevirtv1.Running}
	for {
		running := 0
		for i, name := range names {
			vmi := &kubevirtv1.VirtualMachineInstance{}
			if err := b.c.Get(ctx, client.ObjectKey{Namespace: vmNamespace, Name: name}, vmi); err != nil {
				continue
			}
			now := time.Since(start)
			// A phase passed between two reads counts as seen at the later.
			if at := slices.Index(phases, vmi.Status.Phase); at >= 0 {
				for _, p := range phases[:at+1] {
					if _, ok := seen[i][p]; !ok {
						seen[i][p] = now
					}
				}
			}
			if vmi.Status.Phase == kubevirtv1.Running {
				running++
			}
		}
		if running == len(names) {
			return seen, nil
		}
		select {
		case <-tick.C:
		case <-deadline:
			return nil, fmt.Errorf("%d of %d VMIs Running after %s", running, len(names), timeout)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// podWorkingSets reads the working set of each of pod's containers from
// the kubelet's summary, waiting until it has compute's (it samples on a
// period).
func (b *kvBench) podWorkingSets(ctx context.Context, pod *corev1.Pod) (map[string]int64, error) {
	out := map[string]int64{}
	err := poll(ctx, "the kubelet's summary of "+pod.Name, time.Minute, func() (bool, string, error) {
		sets, err := b.kubeletWorkingSets(ctx, pod.Spec.NodeName)
		if err != nil {
			return false, err.Error(), nil
		}
		for k, v := range sets {
			if c, ok := strings.CutPrefix(k, pod.Name+"/"); ok {
				out[c] = v
			}
		}
		_, ok := out["compute"]
		return ok, "no figure for compute yet", nil
	})
	return out, err
}

// seriesSum adds the values of every series of name in Prometheus's text
// format.
func seriesSum(text, name string) float64 {
	var sum float64
	for _, v := range seriesOf(text, name) {
		sum += v
	}
	return sum
}

// handlerHookSeconds is the framework's hook time so far in virt-handler's
// series on node: the launcher hooks' durations and the node hooks' calls.
func (b *kvBench) handlerHookSeconds(ctx context.Context, node string) (float64, error) {
	text, err := b.handlerMetrics(ctx, node)
	if err != nil {
		return 0, err
	}
	return seriesSum(text, "kubevirt_plugins_launcher_hook_duration_seconds_sum") +
		seriesSum(text, "kubevirt_plugins_node_hook_call_duration_seconds_sum"), nil
}

// handlerWorkingSets reads virt-handler's working set on each worker.
func (b *kvBench) handlerWorkingSets(ctx context.Context) map[string]int64 {
	out := map[string]int64{}
	var pods corev1.PodList
	if err := b.c.List(ctx, &pods, client.InNamespace(kubevirtNamespace), client.MatchingLabels{"kubevirt.io": "virt-handler"}); err != nil {
		return out
	}
	for _, p := range pods.Items {
		if sets, err := b.kubeletWorkingSets(ctx, p.Spec.NodeName); err == nil {
			out[p.Spec.NodeName] = sets[p.Name+"/virt-handler"]
		}
	}
	return out
}

// recordHandlers notes virt-handler's working set on each worker after the
// boots of a set of cases.
func (b *kvBench) recordHandlers(ctx context.Context, last string) {
	for node, v := range b.handlerWorkingSets(ctx) {
		b.handler[last+": "+node] = v
	}
}

// kvDense is the node full of VMs.
type kvDense struct {
	n    int
	node string
	// running is each VMI's creation to Running; wall the first create
	// to the last Running.
	running []time.Duration
	wall    time.Duration
	// nodeCPU is the worker's CPU time over wall, machine this machine's
	// busy CPU time over it.
	nodeCPU, machine time.Duration
	// perVM is each container's working set summed over the VMs and
	// divided by their number; handler is virt-handler's on the node.
	perVM   map[string]int64
	handler int64
	// domainsOK counts the domains with every change.
	domainsOK int
}

// density creates opts.Density VMs with the three Go sidecars at once on
// the first worker.
func (b *kvBench) density(ctx context.Context) error {
	node := b.workers[0]
	n := b.opts.Density
	d := &kvDense{n: n, node: node, perVM: map[string]int64{}}
	b.dense = d
	c := sidecarCases[0]
	names := make([]string, n)
	var yaml strings.Builder
	for i := range names {
		b.seq++
		names[i] = fmt.Sprintf("bench-dense-%d", b.seq)
		yaml.WriteString("---\n" + benchVM(names[i], b.kv.tag, node, c.labels))
	}
	cpu0, busy0, err := cpuTimes(ctx, node)
	if err != nil {
		return err
	}
	start := time.Now()
	if _, err := b.kubectl(ctx, yaml.String(), "create", "-f", "-"); err != nil {
		return err
	}
	seen, err := b.watchPhases(ctx, names, start, 20*time.Minute)
	d.wall = time.Since(start)
	if !b.Check(fmt.Sprintf("all %d VMIs Running on %s", n, node), err == nil, "after %s%s", d.wall.Round(time.Second), errSuffix(err)) {
		b.dumpPods(ctx, vmNamespace)
		return errCheckFailed
	}
	for _, s := range seen {
		d.running = append(d.running, s[kubevirtv1.Running])
	}
	cpu1, busy1, err := cpuTimes(ctx, node)
	if err != nil {
		return err
	}
	d.nodeCPU, d.machine = cpu1-cpu0, busy1-busy0
	var pods []*corev1.Pod
	for _, name := range names {
		vmi, pod, ok, err := b.checkBenchVM(ctx, c, name)
		if err != nil {
			return err
		}
		if ok && vmi.Status.NodeName == node {
			d.domainsOK++
		}
		pods = append(pods, pod)
	}
	time.Sleep(idleSettle)
	for _, pod := range pods {
		sets, err := b.podWorkingSets(ctx, pod)
		if err != nil {
			return err
		}
		for k, v := range sets {
			d.perVM[k] += v
		}
	}
	for k := range d.perVM {
		d.perVM[k] /= int64(n)
	}
	d.handler = b.handlerWorkingSets(ctx)[node]
	st := durStats(d.running)
	b.Show(fmt.Sprintf("creation to Running per VM: median %s ms, p95 %s ms; all %d Running %s after the create; %s used %.1f CPU-seconds, the machine was busy %.1f of the %.1f its %d cores had",
		msShort(st.median), msShort(st.p95), n, d.wall.Round(time.Second), node, d.nodeCPU.Seconds(), d.machine.Seconds(), float64(runtime.NumCPU())*d.wall.Seconds(), runtime.NumCPU()))
	for _, k := range slices.Sorted(maps.Keys(d.perVM)) {
		b.Show(fmt.Sprintf("%s: %s MiB working set per VM", k, mib(d.perVM[k])))
	}
	b.Show(fmt.Sprintf("virt-handler on %s: %s MiB working set", node, mib(d.handler)))
	if _, err := b.kubectl(ctx, "", append([]string{"-n", vmNamespace, "delete", "vm", "--wait=true", "--timeout=5m"}, names...)...); err != nil {
		return err
	}
	for _, pod := range pods {
		if err := b.waitPodGone(ctx, pod, 3*time.Minute); err != nil {
			return err
		}
	}
	return nil
}

// cpuTimes reads node's CPU time so far and this machine's busy time.
func cpuTimes(ctx context.Context, node string) (nodeTime, machine time.Duration, err error) {
	if nodeTime, err = nodeCPU(ctx, node); err != nil {
		return 0, 0, err
	}
	machine, err = machineBusy()
	return nodeTime, machine, err
}

// benchVM is a VM booting the test guest of the images tagged tag (on
// node, if not ""), with a NoCloud disk (cloudinit-network's PreBoot
// rewrites it), every case alike.
func benchVM(name, tag, node string, labels map[string]string) string {
	if len(labels) == 0 {
		labels = map[string]string{"bench.example.com/case": "none"}
	}
	selector := ""
	if node != "" {
		selector = "      nodeSelector:\n        kubernetes.io/hostname: " + node + "\n"
	}
	return `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: ` + name + `
  namespace: ` + vmNamespace + `
spec:
  runStrategy: Always
  template:
    metadata:
      labels:
` + templateLabelLines(labels) + `    spec:
` + selector + `      terminationGracePeriodSeconds: 0
      domain:
        firmware:
          kernelBoot:
            kernelArgs: console=ttyS0 quiet panic=-1
            container:
              image: "localhost/kubevirt-plugins/guest-kernel:` + tag + `"
              imagePullPolicy: IfNotPresent
              kernelPath: /boot/vmlinuz
              initrdPath: /boot/initramfs
        devices:
          disks:
          - name: cloudinit
            cdrom:
              bus: sata
          interfaces:
          - name: default
            masquerade: {}
        resources:
          requests:
            memory: 192Mi
      networks:
      - name: default
        pod: {}
      volumes:
      - name: cloudinit
        cloudInitNoCloud:
          userData: |
            #cloud-config
`
}
