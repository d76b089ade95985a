// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
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
	// of a build in turn.
	Boots int
	// Keep leaves the cluster at the end.
	Keep bool
}

// RunKubeVirtBench boots VMs on KubeVirt v1.9.0 as released, with its
// in-tree alpha-1 CEL hook and without, then on the same cluster moved to
// the patched build, with the framework's launcher CEL hook making the
// same change, without any Plugin, and with the three Go sample sidecars:
// for each boot, VM creation to Running as the user sees it, the
// framework's own hook time (virt-handler's series, the patched build
// only) and the launcher's and virt-handler's memory. Figures are
// reported, never asserted; the checks are that each boot got the change
// its case asks for.
func RunKubeVirtBench(ctx context.Context, opts KubeVirtBenchOptions) *transcript.Result {
	if opts.Out == nil {
		opts.Out = os.Stdout
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	opts.Boots = orDefault(opts.Boots, 10)
	r := transcript.New(opts.Out)
	r.StepTimeout = 60 * time.Minute
	root, err := repo.Root()
	if err != nil {
		return &transcript.Result{Err: err}
	}
	s := &scenario{Runner: r, env: &env{root: root, log: opts.Log}, keep: opts.Keep}
	b := &kvBench{bench: &bench{scenario: s}, boots: opts.Boots, samples: map[string][]kvBoot{}}
	res := r.Run(ctx, []transcript.Step{
		{Title: "A kind cluster of three nodes from the node image built here", Run: s.startCluster},
		{Title: "KubeVirt v1.9.0 built as released and with kubevirt/patches, its images made from Debian packages", Run: s.buildKubeVirt},
		{Title: "KubeVirt as released, with an alpha-1 Plugin whose CEL hook sets the domain's title and description", Run: b.release},
		{Title: fmt.Sprintf("As released: %d boots with the alpha-1 CEL hook and %d without, in turn", opts.Boots, opts.Boots), Run: b.bootCases(releaseCases)},
		{Title: "Moved to the patched build; deploy/ and the framework's Plugin making the same change", Run: b.patched},
		{Title: fmt.Sprintf("Patched: %d boots with the launcher CEL hook and %d without any Plugin, in turn", opts.Boots, opts.Boots), Run: b.bootCases(patchedCases)},
		{Title: "The three Go sample sidecars injected by their policies", Run: b.applySidecars},
		{Title: fmt.Sprintf("Patched: %d boots with the three Go sample sidecars", opts.Boots), Run: b.bootCases(sidecarCases)},
	})
	if opts.Report != nil {
		b.write(opts.Report)
	}
	return res
}

type kvBench struct {
	*bench
	boots   int
	seq     int
	samples map[string][]kvBoot
	// handler is virt-handler's working set on each worker after each set
	// of boots, by "<last case>: <node>".
	handler map[string]int64
}

// kvBoot is what one boot measured.
type kvBoot struct {
	running time.Duration
	// hooks is the framework's hook time the boot added to virt-handler's
	// series on its node: launcher hooks (reported by the launcher) and
	// node hooks; -1 where the build has no such series.
	hooks time.Duration
	// launcher is the compute container's working set once Running.
	launcher int64
}

// kvCase is a VM's labels and what its domain must show.
type kvCase struct {
	name, build string
	labels      map[string]string
	// title is the title the domain must have ("" for none).
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

// bootCases boots each case b.boots times, the cases in turn.
func (b *kvBench) bootCases(cases []kvCase) func(context.Context) error {
	return func(ctx context.Context) error {
		for i := range b.boots {
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
		b.recordHandlers(ctx, cases[len(cases)-1].name)
		return nil
	}
}

func runningTimes(bs []kvBoot) []time.Duration {
	var out []time.Duration
	for _, s := range bs {
		out = append(out, s.running)
	}
	return out
}

// bootOnce creates a VM of case c, times it to Running with a watch on
// its VMI, checks its domain, reads the memory and the hook time, and
// deletes it, waiting for its launcher Pod to go.
func (b *kvBench) bootOnce(ctx context.Context, c kvCase) (kvBoot, error) {
	b.seq++
	name := fmt.Sprintf("bench-%d", b.seq)
	tag := b.kv.tag
	if c.build == "release" {
		tag = b.kv.release
	}
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
	start := time.Now()
	if _, err := b.kubectl(ctx, benchVM(name, tag, c.labels), "create", "-f", "-"); err != nil {
		return kvBoot{}, err
	}
	running, err := b.timeToRunning(ctx, name, start, 6*time.Minute)
	if err != nil {
		b.dumpPods(ctx, vmNamespace)
		return kvBoot{}, err
	}
	vmi := &kubevirtv1.VirtualMachineInstance{}
	if err := b.c.Get(ctx, client.ObjectKey{Namespace: vmNamespace, Name: name}, vmi); err != nil {
		return kvBoot{}, err
	}
	pod, err := b.launcherPodOf(ctx, vmi)
	if err != nil {
		return kvBoot{}, err
	}
	d, _, err := b.kvDomain(ctx, pod, vmi)
	if err != nil {
		return kvBoot{}, err
	}
	wantTitle := ""
	if c.title {
		wantTitle = "VM " + vmNamespace + "/" + name
	}
	b.Check(fmt.Sprintf("%s: %s got its change", c.name, name), d.Title == wantTitle &&
		(!c.smbios || smbiosEntry(d, "manufacturer") == "Example" && watchdogAction(d) == "reset"),
		"title %q (want %q), manufacturer %q, watchdog %q", d.Title, wantTitle, smbiosEntry(d, "manufacturer"), watchdogAction(d))
	sample := kvBoot{running: running, hooks: -1}
	if sets, err := b.kubeletWorkingSets(ctx, vmi.Status.NodeName); err == nil {
		sample.launcher = sets[pod.Name+"/compute"]
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

// timeToRunning reads the VMI name every 100 ms until it is Running and
// returns the time since start.
func (b *kvBench) timeToRunning(ctx context.Context, name string, start time.Time, timeout time.Duration) (time.Duration, error) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(timeout)
	vmi := &kubevirtv1.VirtualMachineInstance{}
	for {
		err := b.c.Get(ctx, client.ObjectKey{Namespace: vmNamespace, Name: name}, vmi)
		if err == nil && vmi.Status.Phase == kubevirtv1.Running {
			return time.Since(start), nil
		}
		select {
		case <-tick.C:
		case <-deadline:
			return 0, fmt.Errorf("VMI %s is not Running after %s (phase %q)", name, timeout, vmi.Status.Phase)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
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

// recordHandlers reads virt-handler's working set on each worker.
func (b *kvBench) recordHandlers(ctx context.Context, build string) {
	if b.handler == nil {
		b.handler = map[string]int64{}
	}
	var pods corev1.PodList
	if err := b.c.List(ctx, &pods, client.InNamespace(kubevirtNamespace), client.MatchingLabels{"kubevirt.io": "virt-handler"}); err != nil {
		return
	}
	for _, p := range pods.Items {
		if sets, err := b.kubeletWorkingSets(ctx, p.Spec.NodeName); err == nil {
			b.handler[build+": "+p.Spec.NodeName] = sets[p.Name+"/virt-handler"]
		}
	}
}

// benchVM is a VM booting the test guest of the images tagged tag, with a
// NoCloud disk (cloudinit-network's PreBoot rewrites it), every case
// alike.
func benchVM(name, tag string, labels map[string]string) string {
	if len(labels) == 0 {
		labels = map[string]string{"bench.example.com/case": "none"}
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
      terminationGracePeriodSeconds: 0
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

// write writes the figures as Markdown.
func (b *kvBench) write(w io.Writer) {
	fmt.Fprintf(w, "| case | boots | creation to Running, ms: median (min–max) | the framework's hook time, ms: median (min–max) | compute's working set, MiB: median |\n|---|---|---|---|---|\n")
	for _, c := range slices.Concat(releaseCases, patchedCases, sidecarCases) {
		bs := b.samples[c.name]
		if len(bs) == 0 {
			continue
		}
		hooks := "not exposed by the release"
		if c.build == "patched" {
			var hs []time.Duration
			for _, s := range bs {
				hs = append(hs, s.hooks)
			}
			hooks = durStats(hs).String()
		}
		var mem []time.Duration
		for _, s := range bs {
			mem = append(mem, time.Duration(s.launcher))
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s |\n", c.name, len(bs), durStats(runningTimes(bs)), hooks, mib(int64(durStats(mem).median)))
	}
	if len(b.handler) > 0 {
		fmt.Fprintf(w, "\nvirt-handler's working set after the boots, MiB:")
		for _, k := range slices.Sorted(maps.Keys(b.handler)) {
			fmt.Fprintf(w, " %s %s;", k, mib(b.handler[k]))
		}
		fmt.Fprintln(w)
	}
}
