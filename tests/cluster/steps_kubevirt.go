// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt-plugins/framework/sample-sidecars/node-hook-recorder/recorder"
	"github.com/kubevirt-plugins/framework/tests/framework/guest"
	"github.com/kubevirt-plugins/framework/tests/framework/transcript"
)

// The phase on KubeVirt itself: v1.9.0 built with kubevirt/patches,
// deployed by its own virt-operator, and a VM a user creates with kubectl, run by KubeVirt's virt-controller,
// virt-handler and virt-launcher with the framework inside.

const (
	kubevirtCR = "kubevirt"
	// virtqemudURI is libvirt in a KubeVirt launcher's compute container:
	// virtqemud runs as the qemu user, in session mode, on its own socket.
	virtqemudURI = "qemu+unix:///session?socket=/var/run/libvirt/virtqemud-sock"
	// kvVMManifest is the VM a user creates (its image tag filled in).
	kvVMManifest = "kubevirt/manifests/vm-plugins.yaml"
	kvVMName     = "plugins-vm"
	// redNetwork is the VM's Multus network (its NetworkAttachmentDefinition
	// is in kvVMManifest); kvDefaultMAC is the MAC of its pod network, which
	// its own networkData names.
	redNetwork   = "red-net"
	kvDefaultMAC = "02:ab:00:00:00:0a"
	// neverUpPlugin has a GuestDefinition sidecar no injection adds.
	neverUpPlugin = "never-up"
)

// kubevirtState is what the KubeVirt phase carries from step to step.
type kubevirtState struct {
	// tag is the images' tag: the patched build's, or, in the pristine
	// run, the unpatched one's; release is the unpatched build's, for the
	// upgrade from it.
	tag, release string
	// upgrade is the VM that ran before the upgrade.
	upgrade *upgradeState
	vmi     *kubevirtv1.VirtualMachineInstance
	pod     *corev1.Pod
	// nodeHooks are the node hook points the recorder on the VMI's node saw
	// for it so far, repeats collapsed.
	nodeHooks []string
}

func (s *scenario) kubevirtSteps() []transcript.Step {
	steps := []transcript.Step{
		{Title: "plugins.plugin.kubevirt.io is the user guide's CRD, and stays so when virt-operator restarts and reconciles", Run: s.kvPluginCRD},
		{Title: "A Prometheus from Debian's binary scrapes the components and evaluates deploy/monitoring's alerts", Run: s.promStart},
		{Title: "A VM created with kubectl boots through KubeVirt with the samples' plugins", Run: s.kvBootVM},
		{Title: "A template label change reaches KubeVirt's launcher Pod in place, without a fight", Run: s.kvSyncLabel},
		{Title: "A VirtualMachineInstanceMigration: KubeVirt migrates the VM with migration-tuner's PreMigrationSource change, the guest goes on", Run: s.kvMigrate},
		{Title: "A PreMigrationSource hook that fails under Fail: KubeVirt cancels the migration and says which Plugin", Run: s.kvMigrateRefused},
		{Title: "The VM stopped through KubeVirt: OnVMStop from its virt-handler, the launcher Pod completes", Run: s.kvStopVM},
		{Title: "A sidecar killed as it starts: the kubelet restarts it in place, and the boot waits for it", Run: s.kvKillSidecar},
		{Title: "A VM with a dedicated CPU through KubeVirt: a Guaranteed launcher Pod with its sidecars, compute's own CPU, the vCPU pinned to it", Run: s.kvDedicated},
		{Title: "A sidecar that never comes up: under Fail the VM does not start and KubeVirt says why; under Ignore it boots", Run: s.kvNeverUp},
		{Title: "A VM no Plugin selects boots with the domain unpatched v1.9.0 defines", Run: s.kvNoPlugin},
		{Title: "Six faults fire their alerts in Prometheus, the alerts resolve once the faults are repaired, and every dashboard query returns a series", Run: s.promFaults},
	}
	if s.e2eEnabled() {
		steps = append(steps, transcript.Step{Title: "KubeVirt's own Plugins e2e, in the guide's shape, with KubeVirt's test framework, on a cluster of its own beside the steps above", Run: s.kvE2E, Timeout: e2eTimeout})
	}
	return steps
}

func (s *scenario) buildKubeVirt(ctx context.Context) error {
	defer markBuilt()
	s.kv = &kubevirtState{}
	var err error
	if s.kv.tag, err = s.buildKubeVirtImages(ctx, nil, "with the patch series"); err != nil {
		return err
	}
	if !s.pristine {
		s.kv.release, err = s.buildKubeVirtImages(ctx, []string{"KVP_KUBEVIRT_PRISTINE=1"}, "as released (the build patches only), to upgrade from")
	}
	return err
}

// builtEnv names a file the scenario creates once its builds are over
// (its first two steps, the ones that keep both cores busy): hack/test.sh
// starts what it runs beside the scenario then, not before.
const builtEnv = "KVP_CLUSTER_BUILT"

func markBuilt() {
	if p := os.Getenv(builtEnv); p != "" {
		_ = os.WriteFile(p, nil, 0o644)
	}
}

// buildKubeVirtImages builds KubeVirt with vars in kubevirt/build.sh's
// environment, makes its images and returns their tag.
func (s *scenario) buildKubeVirtImages(ctx context.Context, vars []string, what string) (string, error) {
	s.Show("building KubeVirt " + what + " (kubevirt/build.sh, cached by the hash of the release, the patches and the linked modules)")
	start := time.Now()
	out, err := s.scriptWith(ctx, vars, "kubevirt/build.sh")
	if err != nil {
		return "", err
	}
	dir := lastLine(out)
	hash, err := s.scriptWith(ctx, vars, "kubevirt/build.sh", "--hash")
	if err != nil {
		return "", err
	}
	tag := strings.TrimSpace(hash)
	s.Show(fmt.Sprintf("built in %s: %s", time.Since(start).Round(time.Second), dir))
	start = time.Now()
	out, err = s.scriptWith(ctx, vars, "kubevirt/images.sh", filepath.Join(dir, "bin"), filepath.Join(dir, "etc"), tag)
	if err != nil {
		return "", err
	}
	s.Show(fmt.Sprintf("images tagged %s in %s:\n%s", tag, time.Since(start).Round(time.Second), indent(out)))
	return tag, nil
}

// deployKubeVirt deploys the images tagged s.kv.tag (the pristine run's).
func (s *scenario) deployKubeVirt(ctx context.Context) error {
	if err := s.kvDeploy(ctx, s.kv.tag); err != nil {
		return err
	}
	return s.checkDeployed(ctx, s.kv.tag, "the release without the framework's patches")
}

// kvDeploy runs kubevirt/deploy.sh for the images tagged tag: on a cluster
// without KubeVirt it installs it, on one with it it moves it to tag, as
// an admin upgrades KubeVirt (the operator manifest, then the CR).
func (s *scenario) kvDeploy(ctx context.Context, tag string) error {
	start := time.Now()
	if _, err := s.script(ctx, "kubevirt/deploy.sh", tag); err != nil {
		s.dumpPods(ctx, kubevirtNamespace)
		return err
	}
	s.Show(fmt.Sprintf("kubevirt/deploy.sh %s: operator manifest rendered by KubeVirt's manifest-templator and applied, KubeVirt CR applied, Deployed in %s",
		tag, time.Since(start).Round(time.Second)))
	return nil
}

// checkDeployed checks that KubeVirt is Deployed and every component runs
// the images tagged tag, built from release.
func (s *scenario) checkDeployed(ctx context.Context, tag, release string) error {
	var kv kubevirtv1.KubeVirt
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: kubevirtNamespace, Name: kubevirtCR}, &kv); err != nil {
		return err
	}
	s.Check("the KubeVirt CR is Deployed and Available", kv.Status.Phase == kubevirtv1.KubeVirtPhaseDeployed && kvAvailable(&kv),
		"phase %s, operator version %s, image tag %s", kv.Status.Phase, kv.Status.OperatorVersion, kv.Status.ObservedKubeVirtVersion)
	for _, name := range []string{"virt-api", "virt-controller"} {
		var d appsv1.Deployment
		err := s.c.Get(ctx, client.ObjectKey{Namespace: kubevirtNamespace, Name: name}, &d)
		s.Check("Deployment "+name+" is Available", err == nil && deploymentAvailable(&d), "%d/%d ready%s", d.Status.ReadyReplicas, d.Status.Replicas, errSuffix(err))
	}
	handler := client.ObjectKey{Namespace: kubevirtNamespace, Name: "virt-handler"}
	err := s.waitDaemonSet(ctx, handler)
	if !s.Check("DaemonSet virt-handler is ready on both workers", err == nil, "%s", errText(err)) {
		s.dumpPods(ctx, kubevirtNamespace)
		return errCheckFailed
	}
	images, err := s.kubevirtImages(ctx)
	if err != nil {
		return err
	}
	var wrong []string
	for _, c := range KubeVirtComponents {
		want := "localhost/kubevirt/" + c + ":" + tag
		if images[c] != want {
			wrong = append(wrong, fmt.Sprintf("%s runs %q", c, images[c]))
		}
	}
	s.Check("every component runs the image built here from "+release+" (tag "+tag+"), the launcher included",
		len(wrong) == 0, "%s", strings.Join(wrong, "; "))
	return nil
}

// applyPlugin applies a Plugin and checks that the API server took it.
// Without the framework's patches it may not (the alpha-1 CRD): the run
// then goes on, to see what else needs the framework.
func (s *scenario) applyPlugin(ctx context.Context, what, yaml string) error {
	_, err := s.kubectl(ctx, yaml, "apply", "-f", "-")
	if s.Check("the API server accepts "+what, err == nil, "%s", errText(err)) || s.pristine {
		return nil
	}
	return errCheckFailed
}

// KubeVirtComponents are the images virt-operator deploys: four
// Deployments, the virt-handler DaemonSet and the launcher.
var KubeVirtComponents = []string{"virt-operator", "virt-api", "virt-controller", "virt-exportproxy", "virt-handler", "virt-launcher"}

// kubevirtImages reads which image each component runs: the Deployments'
// and virt-handler's containers, and the launcher image virt-operator
// hands virt-controller.
func (s *scenario) kubevirtImages(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	for _, name := range KubeVirtComponents[:4] {
		var d appsv1.Deployment
		if err := s.c.Get(ctx, client.ObjectKey{Namespace: kubevirtNamespace, Name: name}, &d); err != nil {
			return nil, err
		}
		if cs := d.Spec.Template.Spec.Containers; len(cs) > 0 {
			out[name] = cs[0].Image
		}
	}
	var ds appsv1.DaemonSet
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: kubevirtNamespace, Name: "virt-handler"}, &ds); err != nil {
		return nil, err
	}
	for _, c := range ds.Spec.Template.Spec.Containers {
		if c.Name == "virt-handler" {
			out[c.Name] = c.Image
		}
	}
	// virt-handler's init container is the launcher image (it copies the
	// launcher's tools onto the node).
	for _, c := range ds.Spec.Template.Spec.InitContainers {
		if strings.Contains(c.Image, "/virt-launcher:") {
			out["virt-launcher"] = c.Image
		}
	}
	return out, nil
}

func kvAvailable(kv *kubevirtv1.KubeVirt) bool {
	for _, c := range kv.Status.Conditions {
		if c.Type == kubevirtv1.KubeVirtConditionAvailable && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func deploymentAvailable(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
			return d.Status.ReadyReplicas > 0
		}
	}
	return false
}

// pluginCRD is what the checks read of plugins.plugin.kubevirt.io.
type pluginCRD struct {
	resourceVersion string
	labels          map[string]string
	specFields      []string
}

func (s *scenario) readPluginCRD(ctx context.Context) (pluginCRD, error) {
	out, err := s.kubectl(ctx, "", "get", "crd", "plugins.plugin.kubevirt.io", "-o", "json")
	if err != nil {
		return pluginCRD{}, err
	}
	var crd struct {
		Metadata struct {
			ResourceVersion string            `json:"resourceVersion"`
			Labels          map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec struct {
			Versions []struct {
				Name   string `json:"name"`
				Schema struct {
					OpenAPIV3Schema struct {
						Properties map[string]struct {
							Properties map[string]json.RawMessage `json:"properties"`
						} `json:"properties"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := json.Unmarshal([]byte(out), &crd); err != nil {
		return pluginCRD{}, err
	}
	c := pluginCRD{resourceVersion: crd.Metadata.ResourceVersion, labels: crd.Metadata.Labels}
	for _, v := range crd.Spec.Versions {
		if v.Name != "v1alpha1" {
			continue
		}
		for f := range v.Schema.OpenAPIV3Schema.Properties["spec"].Properties {
			c.specFields = append(c.specFields, f)
		}
	}
	slices.Sort(c.specFields)
	return c, nil
}

// guideCRD says whether c is the user guide's Plugin CRD: launcherHooks
// and nodeHooks, no alpha-1 domainHooks, not owned by virt-operator.
func guideCRD(c pluginCRD) (bool, string) {
	ok := slices.Contains(c.specFields, "launcherHooks") && slices.Contains(c.specFields, "nodeHooks") &&
		!slices.Contains(c.specFields, "domainHooks") && c.labels["app.kubernetes.io/managed-by"] != "virt-operator"
	return ok, fmt.Sprintf("spec fields %v, managed by %q", c.specFields, c.labels["app.kubernetes.io/managed-by"])
}

// kvPluginCRD checks the CRD, restarts virt-operator with something it
// owns missing (a ClusterRole it installs, deleted while it is down), waits
// for it to reconcile (the ClusterRole is back), and checks the CRD again.
func (s *scenario) kvPluginCRD(ctx context.Context) error {
	// KubeVirt's users name its CR by its singular, "kubevirt": with the
	// Plugin CRD installed beside it, that still means the KubeVirt CR (a
	// category "kubevirt" on the Plugin CRD once shadowed it).
	got, err := s.kubectl(ctx, "", "-n", kubevirtNamespace, "get", "kubevirt", "-o", "name")
	s.Check("`kubectl -n kubevirt get kubevirt` names KubeVirt's CR, with the Plugin CRD installed", strings.TrimSpace(got) == "kubevirt.kubevirt.io/kubevirt",
		"%q%s", strings.TrimSpace(got), errSuffix(err))
	before, err := s.readPluginCRD(ctx)
	if err != nil {
		return err
	}
	ok, detail := guideCRD(before)
	s.Check("the CRD has launcherHooks and nodeHooks, no domainHooks, and virt-operator does not own it", ok, "%s", detail)
	const owned = "kubevirt.io:view"
	if _, err := s.kubectl(ctx, "", "-n", kubevirtNamespace, "scale", "deployment", "virt-operator", "--replicas=0"); err != nil {
		return err
	}
	if _, err := s.kubectl(ctx, "", "-n", kubevirtNamespace, "wait", "pod", "-l", "kubevirt.io=virt-operator", "--for=delete", "--timeout=2m"); err != nil {
		return err
	}
	if _, err := s.kubectl(ctx, "", "delete", "clusterrole", owned); err != nil {
		return err
	}
	restarted := time.Now()
	if _, err := s.kubectl(ctx, "", "-n", kubevirtNamespace, "scale", "deployment", "virt-operator", "--replicas=1"); err != nil {
		return err
	}
	s.Show("virt-operator scaled to 0, ClusterRole " + owned + " (which it installs) deleted, virt-operator scaled back to 1")
	err = poll(ctx, "virt-operator to reconcile", 5*time.Minute, func() (bool, string, error) {
		_, err := s.kubectl(ctx, "", "get", "clusterrole", owned)
		return err == nil, "ClusterRole " + owned + " not back yet", nil
	})
	if !s.Check("the restarted virt-operator reconciled: it put ClusterRole "+owned+" back", err == nil,
		"after %s%s", time.Since(restarted).Round(time.Second), errSuffix(err)) {
		s.dumpPods(ctx, kubevirtNamespace)
		return errCheckFailed
	}
	// Give it the rest of its pass over the install strategy.
	if err := s.waitKubeVirtDeployed(ctx); err != nil {
		return err
	}
	after, err := s.readPluginCRD(ctx)
	if err != nil {
		return err
	}
	ok, detail = guideCRD(after)
	s.Check("after the reconcile the CRD is untouched: still the guide's, same resourceVersion", ok && after.resourceVersion == before.resourceVersion,
		"%s, resourceVersion %s -> %s", detail, before.resourceVersion, after.resourceVersion)
	return nil
}

func (s *scenario) waitKubeVirtDeployed(ctx context.Context) error {
	return poll(ctx, "the KubeVirt CR to be Deployed", 5*time.Minute, func() (bool, string, error) {
		var kv kubevirtv1.KubeVirt
		if err := s.c.Get(ctx, client.ObjectKey{Namespace: kubevirtNamespace, Name: kubevirtCR}, &kv); err != nil {
			return false, err.Error(), nil
		}
		return kv.Status.Phase == kubevirtv1.KubeVirtPhaseDeployed && kvAvailable(&kv), string(kv.Status.Phase), nil
	})
}

// kubevirtCELPlugin is cel-tuning for KubeVirt's domain: the title names
// the VM, the description says who set it. (Two vCPUs with a topology,
// which the project's libvirtd tests set, KubeVirt's domain, sized for CPU
// hotplug with its <vcpus> list, refuses; enabling a second entry of that
// list instead reached the guest, but see docs/kubevirt.md.)
const kubevirtCELPlugin = `apiVersion: plugin.kubevirt.io/v1alpha1
kind: Plugin
metadata:
  name: cel-tuning
spec:
  condition: '"plugins.example.com/cel-tuning" in vmi.Labels'
  launcherHooks:
  - cel:
      hookPoint: GuestDefinition
      expression: >-
        Domain{
          Title: "VM " + vmi.Namespace + "/" + vmi.Name,
          Description: "tuned by the cel-tuning Plugin"
        }
`

// kvManifest is one of kubevirt/manifests for the images built here.
func (s *scenario) kvManifest(path string) (string, error) {
	return s.kvManifestFor(path, s.kv.tag)
}

// kvManifestFor is one of kubevirt/manifests for the images tagged tag.
func (s *scenario) kvManifestFor(path, tag string) (string, error) {
	b, err := os.ReadFile(filepath.Join(s.root, path))
	if err != nil {
		return "", err
	}
	return strings.ReplaceAll(string(b), "@IMAGE_TAG@", tag), nil
}

// waitVMIRunning waits for the VMI of the VM name to run and returns it.
func (s *scenario) waitVMIRunning(ctx context.Context, name string) (*kubevirtv1.VirtualMachineInstance, error) {
	vmi := &kubevirtv1.VirtualMachineInstance{}
	vmi.Namespace, vmi.Name = vmNamespace, name
	err := poll(ctx, "the VMI to run", 6*time.Minute, func() (bool, string, error) {
		if err := s.c.Get(ctx, client.ObjectKeyFromObject(vmi), vmi); err != nil {
			return false, err.Error(), nil
		}
		return vmi.Status.Phase == kubevirtv1.Running, fmt.Sprintf("phase %s on %q", vmi.Status.Phase, vmi.Status.NodeName), nil
	})
	return vmi, err
}

// launcherPodOf finds the launcher Pod virt-controller made for vmi.
func (s *scenario) launcherPodOf(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) (*corev1.Pod, error) {
	var pods corev1.PodList
	if err := s.c.List(ctx, &pods, client.InNamespace(vmi.Namespace), client.MatchingLabels{"kubevirt.io/created-by": string(vmi.UID)}); err != nil {
		return nil, err
	}
	if len(pods.Items) != 1 {
		return nil, fmt.Errorf("VMI %s has %d launcher Pods", vmi.Name, len(pods.Items))
	}
	return &pods.Items[0], nil
}

// virsh runs virsh on virtqemud in the Pod's compute container.
func (s *scenario) virsh(ctx context.Context, pod *corev1.Pod, args ...string) (string, error) {
	return s.kubectl(ctx, "", append([]string{"-n", pod.Namespace, "exec", pod.Name, "-c", "compute", "--", "virsh", "-c", virtqemudURI}, args...)...)
}

// kvDomain reads the domain and its state from virtqemud in the Pod's
// compute container.
func (s *scenario) kvDomain(ctx context.Context, pod *corev1.Pod, vmi *kubevirtv1.VirtualMachineInstance) (*libvirtxml.Domain, string, error) {
	name := vmi.Namespace + "_" + vmi.Name
	state, err := s.virsh(ctx, pod, "domstate", name)
	if err != nil {
		return nil, "", err
	}
	x, err := s.virsh(ctx, pod, "dumpxml", name)
	if err != nil {
		return nil, "", err
	}
	var d libvirtxml.Domain
	if err := d.Unmarshal(x); err != nil {
		return nil, "", err
	}
	return &d, strings.TrimSpace(state), nil
}

// kvGuest reads the test guest's report from KubeVirt's serial console
// log container.
func (s *scenario) kvGuest(ctx context.Context, pod *corev1.Pod) (guest.Report, error) {
	return s.kvWaitGuest(ctx, pod, "the test guest's report", func(r guest.Report) (bool, string) {
		return r.Ready && len(r.Ticks) > 0, fmt.Sprintf("%d report lines so far", len(r.Lines))
	})
}

func (s *scenario) kvBootVM(ctx context.Context) error {
	m, err := s.kvManifest(kvVMManifest)
	if err != nil {
		return err
	}
	created := time.Now()
	out, err := s.kubectl(ctx, m, "apply", "-f", "-")
	if err != nil {
		return err
	}
	s.Show("$ kubectl apply -f " + kvVMManifest + " (image tag " + s.kv.tag + ")\n" + indent(out))
	vmi, err := s.waitVMIRunning(ctx, kvVMName)
	if !s.Check("virt-controller made the VMI and its launcher Pod, virt-handler and virt-launcher ran it", err == nil,
		"Running %s after kubectl apply%s", time.Since(created).Round(100*time.Millisecond), errSuffix(err)) {
		s.dumpPods(ctx, vmNamespace)
		s.dumpPods(ctx, kubevirtNamespace)
		return errCheckFailed
	}
	pod, err := s.launcherPodOf(ctx, vmi)
	if err != nil {
		return err
	}
	s.kv.vmi, s.kv.pod = vmi, pod
	s.Show(fmt.Sprintf("VMI %s (UID %s) Running on %s in Pod %s", vmi.Name, vmi.UID, vmi.Status.NodeName, pod.Name))
	native := nativeSidecars(pod)
	s.Check("the launcher Pod carries smbios-watchdog's sidecar, added by "+s.injection.injector()+" as a native sidecar",
		slices.Contains(native, "smbios-watchdog"), "restartable init containers %v", native)
	d, state, err := s.kvDomain(ctx, pod, vmi)
	if err != nil {
		return err
	}
	s.Check("virsh in the compute container: the domain is running", state == "running", "%s", state)
	s.Check("virsh dumpxml: cel-tuning's title and description", d.Title == "VM "+vmi.Namespace+"/"+vmi.Name &&
		d.Description == "tuned by the cel-tuning Plugin", "title %q, description %q", d.Title, d.Description)
	s.Check("virsh dumpxml: smbios-watchdog's SMBIOS strings from the labels and its i6300esb watchdog",
		smbiosEntry(d, "manufacturer") == "Example" && smbiosEntry(d, "product") == "Edge-1" && watchdogAction(d) == "reset",
		"manufacturer %q, product %q, watchdog action %q", smbiosEntry(d, "manufacturer"), smbiosEntry(d, "product"), watchdogAction(d))
	r, err := s.kvGuest(ctx, pod)
	if !s.Check("the test guest booted and reported on its serial console (kubectl logs -c guest-console-log)", err == nil, "%s", errText(err)) {
		return errCheckFailed
	}
	for _, c := range guestChecks {
		s.Check("in the guest: "+c.name, c.ok(r), "%s", printed(r, c.keys...))
	}
	addr, err := s.multusAddress(ctx, pod, vmNamespace+"/"+redNetwork)
	s.Check("Multus attached the launcher Pod to "+redNetwork+" and wrote its address in the Pod's network-status", err == nil, "%s%s", addr, errSuffix(err))
	s.Check("in the guest: cloudinit-network's entry for red (its MAC, the address Multus gave the Pod) beside the VM's own entry, read from the NoCloud disk",
		addr != "" && networkConfigHas(r, redMAC, addr+"/24") && networkConfigHas(r, kvDefaultMAC), "%s", printed(r, "cidata=", "cidata.network-config"))
	s.Check("in the guest: the vCPU count of the VM's spec", r.VCPUs == 1, "%s", printed(r, "vcpus"))
	evs, err := s.events(ctx, vmi.Status.NodeName, string(vmi.UID))
	if err != nil {
		return err
	}
	got := hookPoints(evs, vmi.Status.NodeName)
	s.Check("KubeVirt's virt-handler on "+vmi.Status.NodeName+" called the recorder's PreVMStart then PostVMStart with the VMI's UID",
		slices.Equal(got, []string{"PreVMStart", "PostVMStart"}), "got %v", got)
	s.kv.nodeHooks = slices.Compact(got)
	if err := s.kvHookCounts(ctx, vmi.Status.NodeName, "the launcher's hook outcomes, reported to virt-handler",
		outcomeSeries{"cel-tuning", "GuestDefinition", "success"}, outcomeSeries{"smbios-watchdog", "GuestDefinition", "success"},
		outcomeSeries{"cloudinit-network", "PreBoot", "success"}); err != nil {
		return err
	}
	return s.kvBootTimeline(ctx, vmi)
}

// kvBootTimeline shows the boot in KubeVirt's terms: the VMI's own phase
// transitions, and the framework's share of it as virt-handler's /metrics
// tells it (the launcher hooks' durations the launcher reported, the node
// hooks' durations), and what kubectl get plugins says of each Plugin.
func (s *scenario) kvBootTimeline(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) error {
	var phases []string
	var first, running time.Time
	for _, t := range vmi.Status.PhaseTransitionTimestamps {
		if first.IsZero() {
			first = t.PhaseTransitionTimestamp.Time
		}
		if t.Phase == kubevirtv1.Running {
			running = t.PhaseTransitionTimestamp.Time
		}
		phases = append(phases, fmt.Sprintf("%s +%s", t.Phase, t.PhaseTransitionTimestamp.Sub(first).Round(time.Second)))
	}
	s.Show("the VMI's phase transitions (status.phaseTransitionTimestamps, one-second resolution): " + strings.Join(phases, ", "))
	text, err := s.handlerMetrics(ctx, vmi.Status.NodeName)
	if err != nil {
		return err
	}
	type timed struct{ metric, plugin, hookPoint string }
	hooks := []timed{
		{"kubevirt_plugins_launcher_hook_duration_seconds", "cel-tuning", "GuestDefinition"},
		{"kubevirt_plugins_launcher_hook_duration_seconds", "smbios-watchdog", "GuestDefinition"},
		{"kubevirt_plugins_launcher_hook_duration_seconds", "cloudinit-network", "PreBoot"},
	}
	var parts []string
	var total float64
	ok := true
	for _, h := range hooks {
		labels := map[string]string{"plugin": h.plugin, "hook_point": h.hookPoint}
		n, sum := seriesValue(text, h.metric+"_count", labels), seriesValue(text, h.metric+"_sum", labels)
		ok = ok && n >= 1
		total += sum
		parts = append(parts, fmt.Sprintf("%s %s: %g run(s), %.1f ms", h.plugin, h.hookPoint, n, sum*1000))
	}
	s.Check("virt-handler's /metrics on "+vmi.Status.NodeName+": the launcher hooks' durations, reported by the launcher (kubevirt_plugins_launcher_hook_duration_seconds)",
		ok, "%s", strings.Join(parts, ", "))
	var node float64
	for _, point := range []string{"PreVMStart", "PostVMStart"} {
		node += seriesValue(text, "kubevirt_plugins_node_hook_call_duration_seconds_sum", map[string]string{"plugin": "node-hook-recorder", "hook_point": point, "outcome": "success"})
	}
	if !running.IsZero() {
		s.Show(fmt.Sprintf("the framework's share of this node's boots so far: launcher hooks %.1f ms, node-hook-recorder's PreVMStart and PostVMStart %.1f ms, against %s from the VMI's first phase to Running",
			total*1000, node*1000, running.Sub(first).Round(time.Second)))
	}
	out, err := s.kubectl(ctx, "", "get", "plugins")
	if err != nil {
		return err
	}
	s.Show("$ kubectl get plugins\n" + indent(out))
	notReady, err := s.kubectl(ctx, "", "get", "plugins", "-o", `jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
	if err != nil {
		return err
	}
	var bad []string
	for line := range strings.SplitSeq(strings.TrimSpace(notReady), "\n") {
		if name, status, _ := strings.Cut(line, "="); status != "True" {
			bad = append(bad, name+" "+status)
		}
	}
	s.Check("plugin-controller reports every Plugin Ready", len(bad) == 0, "not Ready: %v", bad)
	return nil
}

// multusAddress reads the first address Multus's network-status on pod
// gives the network named (namespace/name).
func (s *scenario) multusAddress(ctx context.Context, pod *corev1.Pod, network string) (string, error) {
	var p corev1.Pod
	if err := s.c.Get(ctx, client.ObjectKeyFromObject(pod), &p); err != nil {
		return "", err
	}
	value, ok := p.Annotations[networkStatusAnnotation]
	if !ok {
		return "", fmt.Errorf("pod %s has no %s annotation", p.Name, networkStatusAnnotation)
	}
	var status []struct {
		Name string   `json:"name"`
		IPs  []string `json:"ips"`
	}
	if err := json.Unmarshal([]byte(value), &status); err != nil {
		return "", fmt.Errorf("pod %s: %s: %w", p.Name, networkStatusAnnotation, err)
	}
	for _, st := range status {
		if st.Name == network && len(st.IPs) > 0 {
			return st.IPs[0], nil
		}
	}
	return "", fmt.Errorf("pod %s: %s lists no address for %s: %s", p.Name, networkStatusAnnotation, network, value)
}

// networkConfigHas reports whether the network-config the guest read
// holds each of parts.
func networkConfigHas(r guest.Report, parts ...string) bool {
	for _, want := range parts {
		if !slices.ContainsFunc(r.CIDataFiles["network-config"], func(l string) bool { return strings.Contains(l, want) }) {
			return false
		}
	}
	return r.CIData
}

// outcomeSeries is one series of kubevirt_plugins_launcher_hook_outcomes_total.
type outcomeSeries struct{ plugin, hookPoint, outcome string }

// kvHookCounts checks that virt-handler's metrics on node count at least
// one run of each of want: virt-launcher reports its hook outcomes after
// each sync, and virt-handler adds them to its own series, which one
// scrape per node reads (Prometheus does not scrape launcher Pods).
func (s *scenario) kvHookCounts(ctx context.Context, node, what string, want ...outcomeSeries) error {
	var detail string
	err := poll(ctx, "virt-handler's metrics to count the hook runs", time.Minute, func() (bool, string, error) {
		text, err := s.handlerMetrics(ctx, node)
		if err != nil {
			return false, err.Error(), nil
		}
		var parts []string
		ok := true
		for _, w := range want {
			v := seriesValue(text, "kubevirt_plugins_launcher_hook_outcomes_total", map[string]string{"plugin": w.plugin, "hook_point": w.hookPoint, "outcome": w.outcome})
			parts = append(parts, fmt.Sprintf("%s %s %s: %g", w.plugin, w.hookPoint, w.outcome, v))
			ok = ok && v >= 1
		}
		detail = strings.Join(parts, ", ")
		return ok, detail, nil
	})
	s.Check("virt-handler's /metrics on "+node+": "+what, err == nil, "%s%s", detail, errSuffix(err))
	return nil
}

// handlerMetrics reads the metrics of the virt-handler Pod on node
// through the API server's Pod proxy.
func (s *scenario) handlerMetrics(ctx context.Context, node string) (string, error) {
	var pods corev1.PodList
	if err := s.c.List(ctx, &pods, client.InNamespace(kubevirtNamespace), client.MatchingLabels{"kubevirt.io": "virt-handler"}); err != nil {
		return "", err
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == node {
			b, err := s.cs.CoreV1().Pods(p.Namespace).ProxyGet("https", p.Name, "8443", "metrics", nil).DoRaw(ctx)
			return string(b), err
		}
	}
	return "", fmt.Errorf("no virt-handler Pod on %s", node)
}

// seriesValue finds the value of the series of name with labels (and
// maybe others) in Prometheus's text format; 0 when there is none.
func seriesValue(text, name string, labels map[string]string) float64 {
	for set, value := range seriesOf(text, name) {
		all := true
		for k, v := range labels {
			all = all && strings.Contains(","+set+",", fmt.Sprintf(",%s=%q,", k, v))
		}
		if all {
			return value
		}
	}
	return 0
}

// seriesOf yields the label set and value of each series of name in
// Prometheus's text format.
func seriesOf(text, name string) iter.Seq2[string, float64] {
	return func(yield func(string, float64) bool) {
		for line := range strings.Lines(text) {
			rest, ok := strings.CutPrefix(line, name+"{")
			if !ok {
				continue
			}
			set, value, ok := strings.Cut(rest, "} ")
			if !ok {
				continue
			}
			var f float64
			if _, err := fmt.Sscan(strings.TrimSpace(value), &f); err == nil && !yield(set, f) {
				return
			}
		}
	}
}

// hookPoints lists the hook points of evs, "!" marking one that came from
// another node than node.
func hookPoints(evs []recorder.Event, node string) []string {
	var got []string
	for _, e := range evs {
		p := e.HookPoint
		if e.Node != node {
			p += "!" + e.Node
		}
		got = append(got, p)
	}
	return got
}

// kvSyncLabel changes a template label of the VM and watches the launcher
// Pod: the label-syncer sets it in place, and nothing sets it back (every
// write to the Pod in the next 20 s is counted).
func (s *scenario) kvSyncLabel(ctx context.Context) error {
	vmi, pod := s.kv.vmi, s.kv.pod
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"labels":{%q:"gold"}}}}}`, syncedLabel)
	if _, err := s.kubectl(ctx, "", "-n", vmNamespace, "patch", "vm", vmi.Name, "--type=merge", "-p", patch); err != nil {
		return err
	}
	s.Show("$ kubectl patch vm " + vmi.Name + ": template label " + syncedLabel + " silver -> gold")
	start := time.Now()
	var p corev1.Pod
	err := poll(ctx, "the label on the Pod", 2*time.Minute, func() (bool, string, error) {
		if err := s.c.Get(ctx, client.ObjectKeyFromObject(pod), &p); err != nil {
			return false, "", err
		}
		return p.Labels[syncedLabel] == "gold", p.Labels[syncedLabel], nil
	})
	took := time.Since(start)
	var v kubevirtv1.VirtualMachineInstance
	_ = s.c.Get(ctx, client.ObjectKeyFromObject(vmi), &v)
	s.Check("the label reached the VMI and the running launcher Pod", err == nil && v.Labels[syncedLabel] == "gold",
		"VMI %q, Pod %q after %s%s", v.Labels[syncedLabel], p.Labels[syncedLabel], took.Round(100*time.Millisecond), errSuffix(err))
	versions, flips := map[string]bool{p.ResourceVersion: true}, 0
	watchEnd := time.Now().Add(20 * time.Second)
	for time.Now().Before(watchEnd) {
		var q corev1.Pod
		if err := s.c.Get(ctx, client.ObjectKeyFromObject(pod), &q); err != nil {
			return err
		}
		versions[q.ResourceVersion] = true
		if q.Labels[syncedLabel] != "gold" {
			flips++
		}
		p = q
		time.Sleep(250 * time.Millisecond)
	}
	s.Check("no fight: for 20 s the Pod keeps the label, written at most twice more (status updates)", flips == 0 && len(versions) <= 3,
		"%d reads without the label, %d distinct resourceVersions", flips, len(versions))
	s.Check("in place: the same Pod, still running, no container restarted", p.UID == pod.UID && p.Status.Phase == corev1.PodRunning &&
		restarts(&p) == restarts(pod), "UID %s, phase %s, restarts %d", p.UID, p.Status.Phase, restarts(&p))
	return nil
}

func (s *scenario) kvStopVM(ctx context.Context) error {
	vmi, pod := s.kv.vmi, s.kv.pod
	node := vmi.Status.NodeName
	if err := s.kvHalt(ctx, vmi, pod); err != nil {
		return err
	}
	// The guide lets a node hook fire more than once for one event
	// (virt-handler calls OnVMStop on each pass while the domain shuts
	// down); the events, repeats collapsed, are the life's in order.
	// PostVMStop may come after the VMI is gone (virt-handler's cleanup of
	// it): the recorder is read again for a while until it has it.
	want := append(slices.Clone(s.kv.nodeHooks), "OnVMStop", "PostVMStop")
	var got []string
	err := poll(ctx, "the VMI's node hooks up to PostVMStop", postVMStopWait, func() (bool, string, error) {
		var err error
		if got, err = s.compactHookPoints(ctx, node, string(vmi.UID)); err != nil {
			return false, err.Error(), nil
		}
		return slices.Equal(got, want), fmt.Sprintf("got %v", got), nil
	})
	s.Check("virt-handler on "+node+" called "+strings.Join(want, ", ")+" for the VMI, in order (repeats allowed)",
		err == nil, "got %v%s", got, errSuffix(err))
	return nil
}

// postVMStopWait is how long the recorder is read for a VMI's last node
// hooks once its launcher Pod has completed and the VMI is gone.
const postVMStopWait = 30 * time.Second

// kvHalt stops the VM of vmi (runStrategy Halted) and checks that its
// launcher Pod completes and the VMI goes.
func (s *scenario) kvHalt(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, pod *corev1.Pod) error {
	// The Pod is watched from before the stop to its deletion: virt-controller
	// deletes it soon after it ends, quicker than a poll sees.
	w, err := s.cs.CoreV1().Pods(pod.Namespace).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + pod.Name, ResourceVersion: pod.ResourceVersion})
	if err != nil {
		return err
	}
	defer w.Stop()
	if _, err := s.kubectl(ctx, "", "-n", vmNamespace, "patch", "vm", vmi.Name, "--type=merge", "-p", `{"spec":{"runStrategy":"Halted"}}`); err != nil {
		return err
	}
	s.Show("$ kubectl patch vm " + vmi.Name + " runStrategy Halted")
	last, phases, err := watchToEnd(ctx, w, 4*time.Minute)
	compute := "not seen"
	for _, st := range last.Status.ContainerStatuses {
		if st.Name == "compute" && st.State.Terminated != nil {
			compute = fmt.Sprintf("exited %d (%s)", st.State.Terminated.ExitCode, st.State.Terminated.Reason)
		}
	}
	s.Check("the launcher Pod completed: Succeeded, compute exited 0, before KubeVirt deleted it",
		err == nil && last.Status.Phase == corev1.PodSucceeded && strings.HasPrefix(compute, "exited 0 "),
		"phases %v, compute %s, last seen %s%s", phases, compute, containerStates(last), errSuffix(err))
	err = poll(ctx, "the VMI to go", 2*time.Minute, func() (bool, string, error) {
		var v kubevirtv1.VirtualMachineInstance
		err := s.c.Get(ctx, client.ObjectKeyFromObject(vmi), &v)
		return apierrors.IsNotFound(err), fmt.Sprintf("phase %s", v.Status.Phase), client.IgnoreNotFound(err)
	})
	s.Check("KubeVirt stopped the VM: the VMI is gone", err == nil, "%s", errText(err))
	return nil
}

// watchToEnd follows a Pod's watch until the Pod is deleted and returns
// the last state seen and the phases it went through.
func watchToEnd(ctx context.Context, w watch.Interface, timeout time.Duration) (*corev1.Pod, []corev1.PodPhase, error) {
	last := &corev1.Pod{}
	var phases []corev1.PodPhase
	deadline := time.After(timeout)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return last, phases, fmt.Errorf("the watch of the Pod ended before its deletion")
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod {
				continue
			}
			if ev.Type == watch.Deleted {
				return last, phases, nil
			}
			last = p
			if len(phases) == 0 || phases[len(phases)-1] != p.Status.Phase {
				phases = append(phases, p.Status.Phase)
			}
		case <-deadline:
			return last, phases, fmt.Errorf("the Pod was not deleted within %s", timeout)
		case <-ctx.Done():
			return last, phases, ctx.Err()
		}
	}
}

// neverUpYAML is a Plugin whose GuestDefinition sidecar no injection adds.
func neverUpYAML(strategy string) string {
	return `apiVersion: plugin.kubevirt.io/v1alpha1
kind: Plugin
metadata:
  name: ` + neverUpPlugin + `
spec:
  condition: '"plugins.example.com/never-up" in vmi.Labels'
  failureStrategy: ` + strategy + `
  launcherHooks:
  - sidecar:
      socketPath: /var/run/kubevirt-plugin/never-up/hook.sock
      permittedHooks:
      - GuestDefinition
    timeout: 5s
`
}

// bareVM is a VM with labels and nothing to mount, no boot source and no
// network (a VM whose hooks let it run runs, in its firmware), so that a
// retried sync meets no other error than a hook's. (virt-handler of v1.9.0
// fails to mount a kernel-boot image again on a sync retried after a
// failed one: "container-disks: file exists".)
func bareVM(name string, labels map[string]string) string {
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
        devices:
          autoattachPodInterface: false
        resources:
          requests:
            memory: 64Mi
`
}

// templateLabelLines are labels as the lines of a VM template's
// metadata.labels, sorted by key.
func templateLabelLines(labels map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		fmt.Fprintf(&b, "        %s: %q\n", k, labels[k])
	}
	return b.String()
}

// neverUpVM is a VM labelled for never-up and cel-tuning.
func neverUpVM(name string) string {
	return bareVM(name, map[string]string{"plugins.example.com/never-up": "yes", "plugins.example.com/cel-tuning": "enabled"})
}

// vmiEvents lists the Events on a VMI as "type reason: message".
func (s *scenario) vmiEvents(ctx context.Context, name string) ([]string, error) {
	out, err := s.kubectl(ctx, "", "-n", vmNamespace, "get", "events", "--field-selector", "involvedObject.kind=VirtualMachineInstance,involvedObject.name="+name,
		"-o", `jsonpath={range .items[*]}{.type} {.reason}: {.message}{"\n"}{end}`)
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimSpace(out), "\n"), nil
}

// vmiWarning waits for a Warning Event on the VMI name whose line (as
// vmiEvents gives it) match accepts, and returns the last one. Events are
// sent apart from the status they go with, and later: a component's
// recorder posts them in the background. Waiting fails after
// vmiWarningWait, naming the VMI's Warning Events seen.
func (s *scenario) vmiWarning(ctx context.Context, name string, match func(string) bool) (string, error) {
	var warning string
	var warnings []string
	err := poll(ctx, "a Warning Event on VMI "+name, vmiWarningWait, func() (bool, string, error) {
		evs, err := s.vmiEvents(ctx, name)
		if err != nil {
			return false, err.Error(), nil
		}
		warnings = warnings[:0]
		for _, e := range evs {
			if strings.HasPrefix(e, "Warning ") {
				warnings = append(warnings, e)
				if match(e) {
					warning = e
				}
			}
		}
		return warning != "", fmt.Sprintf("Warning Events on the VMI: %q", warnings), nil
	})
	return warning, err
}

// vmiWarningWait is how long vmiWarning waits.
const vmiWarningWait = time.Minute

func (s *scenario) kvNeverUp(ctx context.Context) error {
	if err := s.applyPlugin(ctx, "Plugin never-up under Fail", neverUpYAML("Fail")); err != nil {
		return err
	}
	s.Show("plugin never-up applied: a GuestDefinition sidecar that no injection adds, failureStrategy Fail, timeout 5s")
	const failName, ignoreName = "never-up-fail", "never-up-ignore"
	if _, err := s.kubectl(ctx, neverUpVM(failName), "apply", "-f", "-"); err != nil {
		return err
	}
	vmi := &kubevirtv1.VirtualMachineInstance{}
	vmi.Namespace, vmi.Name = vmNamespace, failName
	var message string
	var warning string
	err := poll(ctx, "KubeVirt to report the failed hook", 5*time.Minute, func() (bool, string, error) {
		if err := s.c.Get(ctx, client.ObjectKeyFromObject(vmi), vmi); err != nil {
			return false, err.Error(), nil
		}
		if vmi.Status.Phase == kubevirtv1.Running {
			return false, "", fmt.Errorf("the VMI runs although its Fail sidecar never came up")
		}
		message = ""
		for _, c := range vmi.Status.Conditions {
			if c.Type == kubevirtv1.VirtualMachineInstanceSynchronized && c.Status == corev1.ConditionFalse {
				message = c.Message
			}
		}
		evs, err := s.vmiEvents(ctx, failName)
		if err != nil {
			return false, err.Error(), nil
		}
		warning = ""
		for _, e := range evs {
			if strings.HasPrefix(e, "Warning ") && strings.Contains(e, neverUpPlugin) {
				warning = e
			}
		}
		return message != "" && warning != "", fmt.Sprintf("phase %s, condition %q, warning %q", vmi.Status.Phase, message, warning), nil
	})
	names := func(t string) bool {
		return strings.Contains(t, neverUpPlugin) && strings.Contains(t, "GuestDefinition")
	}
	s.Check("the VMI does not run; its Synchronized condition names the Plugin, the hook point and the cause",
		err == nil && vmi.Status.Phase != kubevirtv1.Running && names(message), "phase %s: %s%s", vmi.Status.Phase, message, errSuffix(err))
	s.Check("a Warning Event on the VMI says the same", names(warning), "%s", warning)
	if err := s.kvHookCounts(ctx, vmi.Status.NodeName, "never-up's GuestDefinition failures", outcomeSeries{neverUpPlugin, "GuestDefinition", "error"}); err != nil {
		return err
	}
	if _, err := s.kubectl(ctx, "", "-n", vmNamespace, "delete", "vm", failName, "--wait=true", "--timeout=3m"); err != nil {
		return err
	}
	if err := s.applyPlugin(ctx, "Plugin never-up under Ignore", neverUpYAML("Ignore")); err != nil {
		return err
	}
	s.Show("plugin never-up changed to failureStrategy Ignore")
	start := time.Now()
	if _, err := s.kubectl(ctx, neverUpVM(ignoreName), "apply", "-f", "-"); err != nil {
		return err
	}
	vmi, err = s.waitVMIRunning(ctx, ignoreName)
	s.Check("under Ignore the VM boots without the sidecar", err == nil, "Running after %s%s", time.Since(start).Round(100*time.Millisecond), errSuffix(err))
	skipped, err := s.vmiWarning(ctx, ignoreName, func(e string) bool {
		return strings.HasPrefix(e, "Warning LauncherHookFailureIgnored: ") && names(e)
	})
	s.Check("a Warning Event on the VMI, sent by virt-launcher through virt-handler, says which hook was skipped and why",
		err == nil, "%s%s", skipped, errSuffix(err))
	if err := s.kvHookCounts(ctx, vmi.Status.NodeName, "never-up's GuestDefinition skipped under Ignore", outcomeSeries{neverUpPlugin, "GuestDefinition", "ignored"}); err != nil {
		return err
	}
	if vmi.Status.Phase == kubevirtv1.Running {
		if pod, err := s.launcherPodOf(ctx, vmi); err == nil {
			if d, _, err := s.kvDomain(ctx, pod, vmi); err == nil {
				s.Check("and the other plugins still applied (cel-tuning's title)", d.Title == "VM "+vmi.Namespace+"/"+vmi.Name, "title %q", d.Title)
			}
		}
	}
	if _, err := s.kubectl(ctx, "", "-n", vmNamespace, "delete", "vm", ignoreName, "--wait=false"); err != nil {
		return err
	}
	_, err = s.kubectl(ctx, "", "delete", "plugin", neverUpPlugin, "--ignore-not-found")
	return err
}

const (
	noPluginManifest = "kubevirt/manifests/vm-no-plugin.yaml"
	noPluginVM       = "no-plugin-vm"
	// noPluginDomain is what unpatched v1.9.0 defines for noPluginVM,
	// normalized (normalizeDomain).
	noPluginDomain = "kubevirt/testdata/no-plugin-domain.xml"
)

// kvNoPlugin boots a VM no Plugin selects and compares its domain with the
// one unpatched KubeVirt v1.9.0 defines for it. KVP_KUBEVIRT_DOMAIN_OUT
// names a file to write the normalized domain to (how
// kubevirt/testdata/no-plugin-domain.xml is made: docs/kubevirt.md).
func (s *scenario) kvNoPlugin(ctx context.Context) error {
	m, err := s.kvManifest(noPluginManifest)
	if err != nil {
		return err
	}
	if _, err := s.kubectl(ctx, m, "apply", "-f", "-"); err != nil {
		return err
	}
	vmi, err := s.waitVMIRunning(ctx, noPluginVM)
	if !s.Check("the VM no Plugin selects runs", err == nil, "%s", errText(err)) {
		return errCheckFailed
	}
	pod, err := s.launcherPodOf(ctx, vmi)
	if err != nil {
		return err
	}
	x, err := s.virsh(ctx, pod, "dumpxml", vmi.Namespace+"_"+vmi.Name)
	if err != nil {
		return err
	}
	got := normalizeDomain(x, string(vmi.UID))
	fmt.Fprintf(s.log, "--- the domain of %s, normalized:\n%s\n", noPluginVM, got)
	if out := os.Getenv("KVP_KUBEVIRT_DOMAIN_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(got), 0o644); err != nil {
			return err
		}
		s.Show("the normalized domain written to " + out)
	}
	want, err := os.ReadFile(filepath.Join(s.root, noPluginDomain))
	if s.pristine && os.IsNotExist(err) {
		// The run that makes the reference has none to compare with yet.
		s.Show(noPluginDomain + " does not exist yet: nothing to compare with")
	} else {
		if err != nil {
			return err
		}
		line, diff := firstDifference(string(want), got)
		s.Check("its domain is the one unpatched v1.9.0 defines ("+noPluginDomain+"), identifiers aside", diff == "",
			"%d lines; first difference at line %d: %s", strings.Count(got, "\n"), line, diff)
	}
	_, err = s.kubectl(ctx, "", "-n", vmNamespace, "delete", "vm", noPluginVM, "--wait=false")
	return err
}

// normalizeDomain blanks in a domain's XML what differs from one boot of
// the same VM to the next: the running domain's id (also in libvirt's
// channel directory) and the VMI's UID (in paths).
func normalizeDomain(x, vmiUID string) string {
	x = domainID.ReplaceAllString(x, "<domain${1}")
	x = channelDir.ReplaceAllString(x, "${1}ID-")
	x = strings.ReplaceAll(x, vmiUID, "VMI-UID")
	return strings.TrimSpace(x) + "\n"
}

var (
	domainID   = regexp.MustCompile(`<domain( type='[a-z]+')? id='[0-9]+'`)
	channelDir = regexp.MustCompile(`(/channel/)[0-9]+-`)
)

// firstDifference finds the first line where want and got differ.
func firstDifference(want, got string) (int, string) {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return i + 1, fmt.Sprintf("want %q, got %q", strings.TrimSpace(a), strings.TrimSpace(b))
		}
	}
	return 0, ""
}
