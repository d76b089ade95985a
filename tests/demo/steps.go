// SPDX-License-Identifier: Apache-2.0

package demo

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/testcontainers/testcontainers-go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/tests/framework/apiserver"
	"github.com/kubevirt-plugins/framework/tests/framework/kustomize"
	"github.com/kubevirt-plugins/framework/tests/framework/libvirtd"
	"github.com/kubevirt-plugins/framework/tests/framework/ports"
)

// scenario holds what the steps started and made, for the later steps and
// for cleanup.
type scenario struct {
	*runner
	opts    Options
	cleanup cleanups

	tmp        string // everything on the host lives under it
	hostRoot   string // stands in for the nodes' file system (hostPath volumes)
	server     *apiserver.Server
	kubeconfig string
	nodes      [2]*libvirtd.Node
	conns      [2]*libvirt.Connect

	vm     *kubevirtv1.VirtualMachine
	vmi    *kubevirtv1.VirtualMachineInstance
	pod    *corev1.Pod
	host   *podHost
	target *podHost // the migration target's launcher Pod

	launcher *launcher
	handlers [2]*handler

	bindings []sampleBinding
}

var nodeNames = [2]string{"node1", "node2"}

func (s *scenario) steps() []step {
	return []step{
		{"Build the images of the controllers and the sample plugins", s.buildImages},
		{"Start a local API server with the Plugin and KubeVirt CRDs", s.startAPIServer},
		{"Start plugin-controller and label-syncer from their images against it", s.startControllers},
		{"Start two libvirtd containers as the nodes node1 and node2", s.startNodes},
		{"Apply the sample plugins and wait for their status", s.applyPlugins},
		{"Start the node hook server (the DaemonSet's Pod)", s.startNodeHookServer},
		{"Create the VM, its VMI and its launcher Pod", s.createVM},
		{"Start the launcher Pod's plugin sidecars from their images", s.startSidecars},
		{"virt-handler on node1: PreVMStart and the launcher's plugins", s.handlerPrepare},
		{"virt-launcher: GuestDefinition (CEL hook and smbios-watchdog sidecar)", s.guestDefinition},
		{"virt-launcher: PreBoot (cloudinit-network rewrites the NoCloud ISO)", s.preBoot},
		{"virt-launcher: define and start the domain on node1", s.defineAndStart},
		{"A template label change reaches the VMI and the launcher Pod", s.labelSync},
		{"Live migration node1 -> node2 (target launcher Pod, migration tuned by migration-tuner)", s.migrate},
		{"Stop the VM on node2", s.stop},
		{"Node hook events, in order, from the recorder's file", s.nodeHookEvents},
	}
}

// imageComponents are the images the scenario runs.
var imageComponents = append([]string{"plugin-controller", "label-syncer", "node-hook-recorder"}, samplePlugins...)

func (s *scenario) buildImages(ctx context.Context) error {
	tmp, err := os.MkdirTemp("", "kvp-demo-")
	if err != nil {
		return err
	}
	s.tmp = tmp
	s.cleanup.add(func() error { return os.RemoveAll(tmp) })
	s.hostRoot = filepath.Join(tmp, "host")
	if err := os.MkdirAll(s.hostRoot, 0o755); err != nil {
		return err
	}
	s.show("working directory " + tmp)
	cmd := exec.CommandContext(ctx, filepath.Join(s.opts.Root, "hack", "images.sh"), imageComponents...)
	cmd.Dir = s.opts.Root
	// Its progress lines (stderr) as they come: a first build takes minutes.
	cmd.Stderr = &lineWriter{line: s.show}
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("hack/images.sh: %w\n%s", err, out)
	}
	s.show(string(out))
	for _, c := range imageComponents {
		ref := "kubevirt-plugins/" + c + ":dev"
		err := exec.CommandContext(ctx, "docker", "image", "inspect", ref).Run()
		s.check("image "+ref+" exists locally", err == nil, "")
	}
	return nil
}

func (s *scenario) startAPIServer(ctx context.Context) error {
	server, err := apiserver.Start(apiserver.Options{WithKubeVirtCRDs: true})
	if err != nil {
		return err
	}
	s.server = server
	s.cleanup.add(func() error { return server.Stop() })
	s.show("kube-apiserver at " + server.Config.Host)
	s.kubeconfig, err = server.Kubeconfig(envtest.User{Name: "demo-admin", Groups: []string{"system:masters"}}, s.tmp)
	if err != nil {
		return err
	}
	s.show("kubeconfig for the controllers: " + s.kubeconfig)
	for _, crd := range []struct {
		name string
		list client.ObjectList
	}{
		{"plugins.plugin.kubevirt.io", &pluginv1alpha1.PluginList{}},
		{"virtualmachines.kubevirt.io", &kubevirtv1.VirtualMachineList{}},
		{"virtualmachineinstances.kubevirt.io", &kubevirtv1.VirtualMachineInstanceList{}},
	} {
		err := s.server.Client.List(ctx, crd.list)
		s.check("CRD "+crd.name+" is served", err == nil, "%s", errText(err))
	}
	return nil
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// controllers are the Deployments of deploy/ the demo runs, with the
// arguments it gives them instead of the in-cluster ones.
var controllers = []struct {
	name, deployment string
	args             []string
}{
	{"plugin-controller", "deploy/controller/deployment.yaml", []string{"--enable-webhook=false"}},
	{"label-syncer", "deploy/label-syncer/deployment.yaml", []string{"--additional-launcher-labels-sync=" + labelSyncConfig}},
}

// startControllers runs the controllers' images as their Deployments
// describe them (image, user, read-only root file system, volumes), on the
// host network so that they reach the local API server, with a kubeconfig
// in place of the in-cluster configuration.
func (s *scenario) startControllers(ctx context.Context) error {
	kc, err := os.ReadFile(s.kubeconfig)
	if err != nil {
		return err
	}
	for _, c := range controllers {
		us, err := readManifests(filepath.Join(s.opts.Root, c.deployment))
		if err != nil {
			return err
		}
		var d appsv1.Deployment
		if len(us) != 1 {
			return fmt.Errorf("%s: want one Deployment, found %d objects", c.deployment, len(us))
		}
		if err := toTyped(us[0], &d); err != nil {
			return err
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: c.name + "-demo", Namespace: d.Namespace}, Spec: d.Spec.Template.Spec}
		pod.Spec.HostNetwork = true
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "demo-kubeconfig", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		ctr := &pod.Spec.Containers[0]
		ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: "demo-kubeconfig", MountPath: "/etc/demo", ReadOnly: true})
		host := &podHost{pod: pod, dir: filepath.Join(s.tmp, c.name+"-pod")}
		dir, err := host.volumeDir("demo-kubeconfig", s.hostRoot)
		if err != nil {
			return err
		}
		// The image runs as a non-root user.
		if err := os.WriteFile(filepath.Join(dir, "kubeconfig"), kc, 0o644); err != nil {
			return err
		}
		// A controller whose probe port was taken before it bound it exits;
		// it runs again on another port.
		err = ports.Retry(1, func(p []int) error {
			ctr.Args = append([]string{"--kubeconfig=/etc/demo/kubeconfig", "--metrics-bind-address=0",
				fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", p[0])}, c.args...)
			running, err := s.runPodContainer(ctx, host, ctr.Name, s.hostRoot)
			if err != nil {
				return err
			}
			s.show(fmt.Sprintf("%s (%s): %s", c.name, c.deployment, containerSummary(ctr, running.GetContainerID())))
			alive := func() error {
				st, err := running.State(ctx)
				if err != nil {
					return err
				}
				if !st.Running {
					return ports.InUse(fmt.Errorf("container exited with status %d (its output is in the log)", st.ExitCode), containerLogs(ctx, running))
				}
				return nil
			}
			return s.waitReady(ctx, c.name, fmt.Sprintf("http://127.0.0.1:%d/readyz", p[0]), alive)
		})
		if !s.check(c.name+" is ready", err == nil, "%s", errText(err)) {
			return errCheckFailed
		}
	}
	return nil
}

func (s *scenario) startNodes(ctx context.Context) error {
	nw, err := libvirtd.NewNetwork(ctx)
	if err != nil {
		return err
	}
	s.cleanup.add(func() error { return nw.Remove(context.Background()) })
	// The compute container's ephemeral disks, where the cloud-init ISO
	// lies, are the same directory on both nodes, as shared storage.
	disks := filepath.Join(s.tmp, "pod", "ephemeral-disks")
	if err := os.MkdirAll(disks, 0o777); err != nil {
		return err
	}
	var wg sync.WaitGroup
	var errs [2]error
	for i := range s.nodes {
		wg.Go(func() {
			n, err := libvirtd.Start(ctx, libvirtd.Options{
				Network: nw, Alias: nodeNames[i], Logger: tcLogger{s.opts.Log},
				Binds: []string{disks + ":" + pluginv1alpha1.EphemeralDiskDir},
			})
			if err != nil {
				errs[i] = err
				return
			}
			s.nodes[i] = n
		})
	}
	wg.Wait()
	for i, n := range s.nodes {
		if n != nil {
			s.cleanup.add(func() error { return n.Terminate(context.Background()) })
		}
		if errs[i] != nil {
			return errs[i]
		}
	}
	for i, n := range s.nodes {
		conn, err := n.Connect()
		if err != nil {
			return err
		}
		s.conns[i] = conn
		s.cleanup.add(func() error { _, err := conn.Close(); return err })
		lib, err := conn.GetLibVersion()
		hv, err2 := conn.GetVersion()
		s.check(fmt.Sprintf("libvirtd on %s answers", nodeNames[i]), err == nil && err2 == nil,
			"%s at %s, libvirt %d.%d.%d, QEMU %d.%d.%d", n.Hostname, n.URI(),
			lib/1000000, lib/1000%1000, lib%1000, hv/1000000, hv/1000%1000, hv%1000)
	}
	return nil
}

func (s *scenario) applyPlugins(ctx context.Context) error {
	c := s.server.Client
	var objs []client.Object
	cel, err := decodeManifests([]byte(celPluginYAML), "cel-tuning")
	if err != nil {
		return err
	}
	for _, u := range cel {
		objs = append(objs, u)
	}
	for _, sample := range samplePlugins {
		// The sample's kustomization in sample-sidecars/policies: the Plugin referencing its
		// MutatingAdmissionPolicy, the policy and its binding; its
		// ConfigMap serves the webhook path, which this API server does
		// not use.
		us, err := kustomize.Build(filepath.Join(s.opts.Root, "sample-sidecars", "policies", sample))
		if err != nil {
			return err
		}
		for _, u := range us {
			if u.GetKind() == "ConfigMap" {
				continue
			}
			// Bindings are created with the VM: createVM checks that
			// each policy works before it relies on it.
			if u.GetKind() == "MutatingAdmissionPolicyBinding" {
				s.bindings = append(s.bindings, sampleBinding{sample: sample, obj: u})
				continue
			}
			objs = append(objs, u)
		}
	}
	// The cluster admin's policy for launcher Pods (deploy/policies).
	pol, err := readManifests(filepath.Join(s.opts.Root, launcherPodPolicy))
	if err != nil {
		return err
	}
	for _, u := range pol {
		objs = append(objs, u)
	}
	// The recorder's node hook socket is a host path; on this one machine
	// both nodes' hosts are the directory hostRoot.
	rec, err := readManifests(s.samplePath("node-hook-recorder", "plugin.yaml"))
	if err != nil {
		return err
	}
	for _, u := range rec {
		var p pluginv1alpha1.Plugin
		if err := toTyped(u, &p); err != nil {
			return err
		}
		for i := range p.Spec.NodeHooks {
			p.Spec.NodeHooks[i].Socket = filepath.Join(s.hostRoot, p.Spec.NodeHooks[i].Socket)
		}
		objs = append(objs, &p)
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("create %s %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
		}
		s.show(fmt.Sprintf("created %s %s", kindOf(o), o.GetName()))
	}
	want := append([]string{celPluginName, "node-hook-recorder"}, samplePlugins...)
	sort.Strings(want)
	var plugins pluginv1alpha1.PluginList
	err = waitFor(ctx, "every Plugin to be Ready", func() (bool, error) {
		if err := c.List(ctx, &plugins); err != nil {
			return false, err
		}
		ready := 0
		for _, p := range plugins.Items {
			if meta.IsStatusConditionTrue(p.Status.Conditions, pluginv1alpha1.ConditionReady) && p.Status.ObservedGeneration == p.Generation {
				ready++
			}
		}
		return ready == len(want), nil
	})
	s.show(fmt.Sprintf("%-20s %-9s %-6s %-9s %-28s %s", "PLUGIN", "LAUNCHER", "NODE", "ACCEPTED", "ADMISSION-REFS-RESOLVED", "READY"))
	for _, p := range plugins.Items {
		st := func(t string) string {
			if c := meta.FindStatusCondition(p.Status.Conditions, t); c != nil {
				return string(c.Status)
			}
			return "-"
		}
		s.show(fmt.Sprintf("%-20s %-9d %-6d %-9s %-28s %s", p.Name, p.Status.LauncherHooks, p.Status.NodeHooks,
			st(pluginv1alpha1.ConditionAccepted), st(pluginv1alpha1.ConditionAdmissionReferencesResolved), st(pluginv1alpha1.ConditionReady)))
	}
	for _, name := range want {
		ok := false
		msg := "not found"
		for _, p := range plugins.Items {
			if p.Name == name {
				cond := meta.FindStatusCondition(p.Status.Conditions, pluginv1alpha1.ConditionReady)
				ok = cond != nil && cond.Status == metav1.ConditionTrue
				msg = "no Ready condition"
				if cond != nil {
					msg = cond.Reason + ": " + cond.Message
				}
			}
		}
		s.check("Plugin "+name+" is Ready", ok, "%s", msg)
	}
	if err != nil {
		return err
	}
	return s.rejectedPlugin(ctx)
}

// brokenPluginYAML has a GuestDefinition expression naming a field the
// Domain type does not have. With the webhook off the API server stores
// it; the controller reports it on the status.
const brokenPluginYAML = `apiVersion: plugin.kubevirt.io/v1alpha1
kind: Plugin
metadata:
  name: typo
spec:
  launcherHooks:
  - cel:
      hookPoint: GuestDefinition
      expression: 'Domain{CPUX: DomainCPU{Mode: "host-model"}}'
`

// rejectedPlugin shows plugin-controller refusing a Plugin whose CEL does
// not compile, then deletes it again.
func (s *scenario) rejectedPlugin(ctx context.Context) error {
	c := s.server.Client
	var p pluginv1alpha1.Plugin
	if err := yaml.Unmarshal([]byte(brokenPluginYAML), &p); err != nil {
		return err
	}
	if err := c.Create(ctx, &p); err != nil {
		return fmt.Errorf("create Plugin %s: %w", p.Name, err)
	}
	s.show("created Plugin typo (expression 'Domain{CPUX: ...}', the webhook is off so the API server stores it)")
	var cond *metav1.Condition
	err := waitFor(ctx, "the status of Plugin typo", func() (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(&p), &p); err != nil {
			return false, err
		}
		cond = meta.FindStatusCondition(p.Status.Conditions, pluginv1alpha1.ConditionAccepted)
		return cond != nil && p.Status.ObservedGeneration == p.Generation, nil
	})
	if err != nil {
		return err
	}
	ready := meta.IsStatusConditionTrue(p.Status.Conditions, pluginv1alpha1.ConditionReady)
	s.check("plugin-controller reports Plugin typo not Accepted and not Ready, naming the field",
		cond.Status == metav1.ConditionFalse && !ready && strings.Contains(cond.Message, "cel.expression"),
		"Accepted=%s %s: %s", cond.Status, cond.Reason, cond.Message)
	if err := c.Delete(ctx, &p); err != nil {
		return fmt.Errorf("delete Plugin %s: %w", p.Name, err)
	}
	s.show("deleted Plugin typo")
	return nil
}

func kindOf(o client.Object) string {
	if k := o.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	if _, ok := o.(*pluginv1alpha1.Plugin); ok {
		return "Plugin"
	}
	return fmt.Sprintf("%T", o)
}

func (s *scenario) createVM(ctx context.Context) error {
	c := s.server.Client
	s.vm = newVM()
	if err := c.Create(ctx, s.vm); err != nil {
		return fmt.Errorf("create VM: %w", err)
	}
	s.show(fmt.Sprintf("VirtualMachine %s/%s uid %s", s.vm.Namespace, s.vm.Name, s.vm.UID))
	s.vmi = newVMI(s.vm)
	if err := c.Create(ctx, s.vmi); err != nil {
		return fmt.Errorf("create VMI: %w", err)
	}
	s.show(fmt.Sprintf("VirtualMachineInstance %s/%s uid %s", s.vmi.Namespace, s.vmi.Name, s.vmi.UID))
	if err := s.bindInjectionPolicies(ctx, newLauncherPod(s.vmi, "x7k2p")); err != nil {
		return err
	}
	pod, err := s.createLauncherPod(ctx, "x7k2p")
	if err != nil {
		return err
	}
	s.pod = pod
	s.host = &podHost{pod: s.pod, dir: filepath.Join(s.tmp, "pod")}

	// The same Pod with a sidecar that mounts every plugin's sockets.
	rogue := newLauncherPod(s.vmi, "rogue")
	rogue.Spec.Containers = append(rogue.Spec.Containers, corev1.Container{
		Name: "rogue", Image: "kvp-smbios-watchdog:latest",
		VolumeMounts: []corev1.VolumeMount{{Name: pluginv1alpha1.SocketsVolumeName, MountPath: pluginv1alpha1.SocketsRoot}},
	})
	wctx, cancel := context.WithTimeout(ctx, policyWait)
	defer cancel()
	var refusal error
	err = waitFor(wctx, "the launcher Pod policy to refuse a sidecar without subPath", func() (bool, error) {
		refusal = c.Create(wctx, rogue.DeepCopy(), client.DryRunAll)
		return refusal != nil && strings.Contains(refusal.Error(), "offending containers: rogue"), refusal
	})
	s.check(launcherPodPolicy+" refuses a launcher Pod whose sidecar mounts the whole sockets volume", err == nil, "%s", errText(refusal))
	return nil
}

// launcherPodPolicy is the ValidatingAdmissionPolicy deploy/ ships for
// virt-launcher Pods.
const launcherPodPolicy = "deploy/policies/launcher-sockets-subpath.yaml"

// policyWait bounds the wait for an admission policy to take effect.
const policyWait = time.Minute

// createLauncherPod creates a launcher Pod for the VMI, as virt-controller
// would, and checks it has the sidecars.
func (s *scenario) createLauncherPod(ctx context.Context, suffix string) (*corev1.Pod, error) {
	pod := newLauncherPod(s.vmi, suffix)
	if err := s.server.Client.Create(ctx, pod); err != nil {
		return nil, fmt.Errorf("create launcher Pod: %w", err)
	}
	s.show(fmt.Sprintf("Pod %s/%s uid %s (labels kubevirt.io/created-by=%s, controller ownerReference to the VMI)",
		pod.Namespace, pod.Name, pod.UID, s.vmi.UID))
	var names, initNames []string
	for _, ctr := range pod.Spec.Containers {
		names = append(names, ctr.Name)
	}
	for _, ctr := range pod.Spec.InitContainers {
		initNames = append(initNames, ctr.Name)
	}
	s.show("containers after admission: " + strings.Join(names, ", ") + "; init containers: " + strings.Join(initNames, ", "))
	for _, sample := range samplePlugins {
		s.check("Pod "+pod.Name+" has the "+sample+" sidecar as a native sidecar (init container, restartPolicy Always)",
			nativeSidecar(pod, sample) != nil && !slices.Contains(names, sample), "")
	}
	return pod, nil
}

func (s *scenario) startSidecars(ctx context.Context) error {
	return s.startPodSidecars(ctx, s.host)
}

// startPodSidecars runs the plugin sidecars of a launcher Pod and waits
// for their sockets.
func (s *scenario) startPodSidecars(ctx context.Context, host *podHost) error {
	var wg sync.WaitGroup
	ctrs := make([]*testcontainers.DockerContainer, len(samplePlugins))
	errs := make([]error, len(samplePlugins))
	for i, name := range samplePlugins {
		wg.Go(func() {
			ctrs[i], errs[i] = s.runPodContainer(ctx, host, name, s.hostRoot)
		})
	}
	wg.Wait()
	host.sidecars = map[string]*testcontainers.DockerContainer{}
	for i, name := range samplePlugins {
		if errs[i] != nil {
			return errs[i]
		}
		host.sidecars[name] = ctrs[i]
		if c := podContainer(host.pod, name); c != nil {
			s.show(containerSummary(c, ctrs[i].GetContainerID()))
		}
	}
	sockets, err := host.volumeDir(pluginv1alpha1.SocketsVolumeName, s.hostRoot)
	if err != nil {
		return err
	}
	for _, name := range samplePlugins {
		sock := filepath.Join(sockets, name, "hook.sock")
		err := waitFor(ctx, "socket "+sock, func() (bool, error) {
			fi, err := os.Stat(sock)
			return err == nil && fi.Mode()&os.ModeSocket != 0, err
		})
		s.check(name+" serves its socket", err == nil, "%s", strings.TrimPrefix(sock, s.tmp+"/"))
	}
	return nil
}
