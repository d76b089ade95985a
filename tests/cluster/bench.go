// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/tests/framework/repo"
	"github.com/kubevirt-plugins/framework/tests/framework/transcript"
)

// BenchOptions configure RunBench.
type BenchOptions struct {
	// Out receives the transcript (default os.Stdout), Log the scripts'
	// and kubectl's output (default io.Discard).
	Out, Log io.Writer
	// Report receives the figures as Markdown tables; nil: none.
	Report io.Writer
	// Boots is the number of boots of each case, one after another
	// (default 10); Density the number of VMs booted at once on one worker
	// (default 10).
	Boots, Density int
	// Reuse runs on the cluster an earlier run left (Keep) instead of
	// making one; Keep leaves the cluster at the end.
	Reuse, Keep bool
}

// RunBench measures what a VM pays on the node, on a kind cluster set up
// as the scenario sets it up: boot latency itemised from the container
// runtime's and the stand-ins' own times for four cases (no launcher
// plugin, CEL plugins only, the three Go sample sidecars, the Python
// sample's sidecar), each sidecar's
// memory in its container's cgroup, and a worker with Density VMs booted
// at once. Figures are reported, never asserted; the checks are that each
// boot ran the hooks its case asks for and that every VM of the full node
// got every change.
func RunBench(ctx context.Context, opts BenchOptions) (*transcript.Result, *BenchFigures) {
	if opts.Out == nil {
		opts.Out = os.Stdout
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	opts.Boots = orDefault(opts.Boots, 10)
	opts.Density = orDefault(opts.Density, 10)
	r := transcript.New(opts.Out)
	r.StepTimeout = 30 * time.Minute
	root, err := repo.Root()
	if err != nil {
		return &transcript.Result{Err: err}, nil
	}
	s := &scenario{Runner: r, env: &env{root: root, log: opts.Log}, keep: opts.Keep || opts.Reuse, standins: true}
	b := &bench{scenario: s, opts: opts, figures: &BenchFigures{Boots: map[string][]bootSample{}}}
	var steps []transcript.Step
	if opts.Reuse {
		steps = append(steps, transcript.Step{Title: "The kind cluster an earlier run kept", Run: b.reuse})
	} else {
		steps = append(steps,
			transcript.Step{Title: "A kind cluster of three nodes from the node image built here, with the stand-ins' images", Run: s.startCluster},
			transcript.Step{Title: "kubectl apply -k deploy/ and deploy/sidecar-injector into the restricted namespace kubevirt", Run: s.deploy},
			transcript.Step{Title: "The samples applied with kubectl apply -k for the injection path, and the virt-handler stand-in", Run: s.applySamples},
		)
	}
	steps = append(steps, transcript.Step{Title: "Benchmark setup: a second CEL plugin, the Python sample, the handler looking every 100 ms", Run: b.setup})
	steps = append(steps, transcript.Step{Title: fmt.Sprintf("Boot latency: %d rounds of one boot of each case, one after another on the first worker", opts.Boots), Run: b.boots})
	steps = append(steps,
		transcript.Step{Title: "Sidecar memory in each container's cgroup: idle after boot, on the source after a migration's calls, and on the target", Run: b.memory},
		transcript.Step{Title: fmt.Sprintf("A node full of VMs: %d launcher Pods with every sample's sidecar booted at once on one worker", opts.Density), Run: b.density},
	)
	res := r.Run(ctx, steps)
	if opts.Report != nil {
		b.figures.write(opts.Report)
	}
	return res, b.figures
}

// orDefault is v, or def when v is not positive.
func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

type bench struct {
	*scenario
	opts    BenchOptions
	figures *BenchFigures
	seq     int
}

// bootCase is a set of VM labels and the launcher hooks they make a boot
// run.
type bootCase struct {
	name   string
	labels map[string]string
	hooks  []hookWant
	// sidecars are the sidecar containers the labels have injected.
	sidecars []string
}

const celDescribeLabel = "plugins.example.com/cel-describe"

// celDescribeYAML is the second CEL plugin of the CEL case: a description
// of the domain from the VMI's name and labels.
const celDescribeYAML = `apiVersion: plugin.kubevirt.io/v1alpha1
kind: Plugin
metadata:
  name: cel-describe
spec:
  condition: '"` + celDescribeLabel + `" in vmi.Labels'
  launcherHooks:
  - cel:
      hookPoint: GuestDefinition
      expression: >-
        Domain{Description: "VM " + vmi.Name + " in " + vmi.Namespace + ", " + string(size(vmi.Labels)) + " labels"}
`

const pythonSample = "python-guestdefinition"

var bootCases = []bootCase{
	{name: "no launcher plugin", labels: map[string]string{}},
	{name: "CEL plugins only", labels: map[string]string{"plugins.example.com/cel-tuning": "enabled", celDescribeLabel: "enabled"},
		hooks: []hookWant{{"GuestDefinition", "cel-describe", "cel"}, {"GuestDefinition", "cel-tuning", "cel"}}},
	{name: "the three Go sample sidecars", labels: goSidecarLabels(), sidecars: samples,
		hooks: []hookWant{{"GuestDefinition", "smbios-watchdog", "sidecar"}, {"PreBoot", "cloudinit-network", "sidecar"}}},
	// Beside those three: a sidecar whose image
	// is eight times as large and whose process is an interpreter, to show
	// what that costs in the kubelet's start and in the socket wait.
	{name: "the Python sample sidecar", labels: map[string]string{"plugins.example.com/" + pythonSample: "enabled"}, sidecars: []string{pythonSample},
		hooks: []hookWant{{"GuestDefinition", pythonSample, "sidecar"}}},
}

// goSidecarLabels are the scenario's VM labels without cel-tuning's.
func goSidecarLabels() map[string]string {
	l := templateLabels()
	delete(l, "plugins.example.com/cel-tuning")
	delete(l, syncedLabel)
	return l
}

func (b *bench) reuse(ctx context.Context) error {
	if err := b.readEnv(ctx); err != nil {
		return err
	}
	if err := b.connect(); err != nil {
		return err
	}
	var nodes corev1.NodeList
	if err := b.c.List(ctx, &nodes); err != nil {
		return fmt.Errorf("the kept cluster does not answer: %w", err)
	}
	for _, n := range nodes.Items {
		if _, cp := n.Labels["node-role.kubernetes.io/control-plane"]; !cp {
			b.workers = append(b.workers, n.Name)
		}
	}
	slices.Sort(b.workers)
	inj, err := b.chooseInjection()
	if err != nil {
		return err
	}
	b.injection = inj
	b.Show(fmt.Sprintf("cluster %s, workers %v, the %s injection path", b.name, b.workers, b.injection))
	return nil
}

func (b *bench) setup(ctx context.Context) error {
	if err := b.installCRITimes(ctx); err != nil {
		return err
	}
	b.Show("cmd/cri-times on the workers, to read the runtime's own times of each launcher Pod")
	if _, err := b.kubectl(ctx, celDescribeYAML, "apply", "-f", "-"); err != nil {
		return err
	}
	b.Show("plugin cel-describe applied (a second GuestDefinition CEL hook)")
	if _, err := b.script(ctx, "hack/images.sh", pythonSample); err != nil {
		return err
	}
	if _, err := b.script(ctx, "hack/kind/cluster.sh", "load", "kvp-"+pythonSample+":latest"); err != nil {
		return err
	}
	if _, err := b.kubectl(ctx, "", "apply", "-k", b.injection.sampleDir(pythonSample)); err != nil {
		return err
	}
	b.Show("the Python sample's image loaded and " + b.injection.sampleDir(pythonSample) + " applied")
	// The stand-in handler looks at the VMIs on a period (KubeVirt's is
	// told by an informer): 100 ms keeps the wait it adds to each boot
	// small, and it is reported on its own.
	patch := `[{"op":"replace","path":"/spec/template/spec/containers/0/args","value":["--interval=100ms"]}]`
	if _, err := b.kubectl(ctx, "", "-n", standinNamespace, "patch", "daemonset", "virt-handler", "--type=json", "-p", patch); err != nil {
		return err
	}
	if _, err := b.kubectl(ctx, "", "-n", standinNamespace, "rollout", "status", "daemonset/virt-handler", "--timeout=3m"); err != nil {
		return err
	}
	err := poll(ctx, "the Plugins to be Ready", 2*time.Minute, func() (bool, string, error) {
		for _, name := range []string{"cel-describe", pythonSample} {
			var p pluginv1alpha1.Plugin
			if err := b.c.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil {
				return false, err.Error(), nil
			}
			if !meta.IsStatusConditionTrue(p.Status.Conditions, pluginv1alpha1.ConditionReady) {
				return false, name + " not Ready", nil
			}
		}
		return true, "", nil
	})
	b.Check("Plugins cel-describe and "+pythonSample+" are Ready, the handler looks every 100 ms", err == nil, "%s", errText(err))
	return err
}

// bootVMs creates, for each label set, a VM, its VMI and launcher Pod on
// node, and schedules the VMI at once (the handler waits for the Pod).
// It returns the VMIs, their Pods and when each Pod's create was sent.
func (b *bench) bootVMs(ctx context.Context, prefix, node string, labels []map[string]string) ([]*kubevirtv1.VirtualMachineInstance, []*corev1.Pod, []time.Time, error) {
	vmis := make([]*kubevirtv1.VirtualMachineInstance, len(labels))
	pods := make([]*corev1.Pod, len(labels))
	created := make([]time.Time, len(labels))
	for i, l := range labels {
		b.seq++
		vm := newVM(fmt.Sprintf("%s-%d", prefix, b.seq), fmt.Sprintf("00000000-0000-4000-8000-%012d", b.seq))
		vm.Spec.Template.ObjectMeta.Labels = maps.Clone(l)
		if err := b.c.Create(ctx, vm); err != nil {
			return nil, nil, nil, err
		}
		vmi := newVMI(vm)
		if err := b.c.Create(ctx, vmi); err != nil {
			return nil, nil, nil, err
		}
		vmis[i] = vmi
	}
	for i, vmi := range vmis {
		pod := newLauncherPod(vmi, "src", node)
		created[i] = time.Now()
		if err := b.c.Create(ctx, pod); err != nil {
			return nil, nil, nil, fmt.Errorf("creating launcher Pod %s: %w", pod.Name, err)
		}
		pods[i] = pod
	}
	// virt-controller's part: each VMI Scheduled on node, its launcher Pod
	// active there (the handler waits for the Pod to run).
	for i, vmi := range vmis {
		if err := b.scheduleOn(ctx, vmi, pods[i], node); err != nil {
			return nil, nil, nil, err
		}
	}
	return vmis, pods, created, nil
}

// waitRunning waits until every VMI is Running.
func (b *bench) waitRunning(ctx context.Context, vmis []*kubevirtv1.VirtualMachineInstance, timeout time.Duration) error {
	return poll(ctx, "the VMIs to run", timeout, func() (bool, string, error) {
		running := 0
		for _, vmi := range vmis {
			if err := b.c.Get(ctx, client.ObjectKeyFromObject(vmi), vmi); err != nil {
				return false, err.Error(), nil
			}
			if vmi.Status.Phase == kubevirtv1.Running {
				running++
			}
		}
		return running == len(vmis), fmt.Sprintf("%d of %d Running", running, len(vmis)), nil
	})
}

// stopVMs deletes the VMIs and their VMs, waits until the handlers have
// stopped them and their Pods have completed, and lets the Pods go.
func (b *bench) stopVMs(ctx context.Context, vmis []*kubevirtv1.VirtualMachineInstance, pods []*corev1.Pod) error {
	for _, vmi := range vmis {
		if err := b.c.Delete(ctx, vmi); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	err := poll(ctx, "the VMIs to go", 5*time.Minute, func() (bool, string, error) {
		left := 0
		for _, vmi := range vmis {
			err := b.c.Get(ctx, client.ObjectKeyFromObject(vmi), &kubevirtv1.VirtualMachineInstance{})
			if !apierrors.IsNotFound(err) {
				left++
			}
		}
		return left == 0, fmt.Sprintf("%d VMIs left", left), nil
	})
	if err != nil {
		return err
	}
	for _, p := range pods {
		if p == nil {
			continue
		}
		if err := b.waitCompleted(ctx, p); err != nil {
			return err
		}
		_ = b.c.Delete(ctx, p)
	}
	for _, vmi := range vmis {
		vm := &kubevirtv1.VirtualMachine{}
		vm.Namespace, vm.Name = vmi.Namespace, vmi.Name
		_ = b.c.Delete(ctx, vm)
	}
	return nil
}

// sample reads what one boot took: the timeline the handler wrote on the
// VMI and the container runtime's times of the Pod.
func (b *bench) sample(ctx context.Context, caseName string, vmi *kubevirtv1.VirtualMachineInstance, pod *corev1.Pod, created time.Time) (bootSample, error) {
	bs := bootSample{Case: caseName, VMI: vmi.Name, Created: created}
	if err := b.c.Get(ctx, client.ObjectKeyFromObject(vmi), vmi); err != nil {
		return bs, err
	}
	tl, err := readTimeline(vmi)
	if err != nil {
		return bs, err
	}
	bs.Timeline = *tl
	if err := b.c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
		return bs, err
	}
	pt, err := b.podTimes(ctx, pod)
	if err != nil {
		return bs, err
	}
	bs.Pod = *pt
	return bs, nil
}

// boots boots each case once per round, the cases in turn, so that a slow
// spell of the machine falls on every case alike.
func (b *bench) boots(ctx context.Context) error {
	node := b.workers[0]
	failed := map[string][]string{}
	for round := range b.opts.Boots {
		for _, c := range bootCases {
			bs, err := b.bootOnce(ctx, c, node)
			if err != nil {
				failed[c.name] = append(failed[c.name], fmt.Sprintf("round %d: %v", round+1, err))
				continue
			}
			b.figures.Boots[c.name] = append(b.figures.Boots[c.name], bs)
			b.Show(fmt.Sprintf("round %d, %s: %s from the Pod's creation to the domain running; framework %s", round+1, c.name,
				ms(bs.total()), ms(bs.frameworkShare())))
		}
	}
	for _, c := range bootCases {
		b.Check(fmt.Sprintf("%s: %d boots, each with its case's hooks (%s) and sidecars, timed whole", c.name, b.opts.Boots, hookList(c.hooks)),
			len(failed[c.name]) == 0, "%s", strings.Join(failed[c.name], "; "))
		if n := len(b.figures.Boots[c.name]); n > 0 {
			sum := summarize(b.figures.Boots[c.name])
			b.Show(fmt.Sprintf("%s, median of %d: %s to the domain running (min %s, max %s); framework %s", c.name, n,
				ms(sum.total.median), ms(sum.total.min), ms(sum.total.max), ms(sum.framework.median)))
		}
	}
	return nil
}

// bootOnce boots one VM of case c on node, reads what the boot took, and
// stops the VM.
func (b *bench) bootOnce(ctx context.Context, c bootCase, node string) (bootSample, error) {
	vmis, pods, created, err := b.bootVMs(ctx, "bench-boot", node, []map[string]string{c.labels})
	if err != nil {
		return bootSample{}, err
	}
	err = b.waitRunning(ctx, vmis, 4*time.Minute)
	var bs bootSample
	if err == nil {
		bs, err = b.sample(ctx, c.name, vmis[0], pods[0], created[0])
	}
	if err == nil {
		err = checkTimeline(&bs.Timeline, c.hooks)
	}
	if err == nil && !slices.Equal(bs.Pod.sidecarNames(), c.sidecars) {
		err = fmt.Errorf("sidecars %v, want %v", bs.Pod.sidecarNames(), c.sidecars)
	}
	if err != nil {
		err = fmt.Errorf("%s: %w", vmis[0].Name, err)
		b.dumpPods(ctx, vmNamespace)
	}
	if serr := b.stopVMs(ctx, vmis, pods); serr != nil {
		return bs, errors.Join(err, serr)
	}
	return bs, err
}

func hookList(hooks []hookWant) string {
	if len(hooks) == 0 {
		return "none"
	}
	var out []string
	for _, h := range hooks {
		out = append(out, h.point+" "+h.plugin)
	}
	return strings.Join(out, ", ")
}
