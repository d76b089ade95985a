// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

const (
	kubevirtNamespace = "kubevirt"
	recorderNamespace = "kubevirt-plugins-node-hooks"
	// restrictedCheckNamespace enforces the restricted Pod Security level,
	// for checkRestricted.
	restrictedCheckNamespace = "kvp-restricted-check"
	controllerLease          = "plugin-controller.plugin.kubevirt.io"
	labelSyncerLease         = "label-syncer.kubevirt-plugins.io"
)

// images are built here and loaded into the workers.
var images = []string{
	"kubevirt-plugins/plugin-controller:dev", "kubevirt-plugins/label-syncer:dev",
	"kvp-cloudinit-network:latest", "kvp-migration-tuner:latest", "kvp-smbios-watchdog:latest",
	"kvp-node-hook-recorder:latest",
}

func (s *scenario) startCluster(ctx context.Context) error {
	// The images are first used once KubeVirt runs (deploy): built in the
	// background, on a bare machine while the cluster comes up and
	// KubeVirt builds and deploys, instead of before all of it.
	s.Show("building the images of the controllers and samples (hack/images.sh) in the background; the first step that uses them waits for them")
	s.imagesBuilt = make(chan struct{})
	// Not the step's context, which ends with the step.
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Minute)
	go func() {
		defer cancel()
		_, err := s.script(bctx, "hack/images.sh", "plugin-controller", "label-syncer", "cloudinit-network",
			"migration-tuner", "smbios-watchdog", "node-hook-recorder")
		s.imagesErr = err
		close(s.imagesBuilt)
	}()
	s.Show("building the node image once per Kubernetes version (cached), creating the cluster (hack/kind/cluster.sh up)")
	start := time.Now()
	if _, err := s.script(ctx, "hack/kind/cluster.sh", "up"); err != nil {
		return err
	}
	took := time.Since(start).Round(time.Second)
	if err := s.readEnv(ctx); err != nil {
		return err
	}
	if err := s.connect(); err != nil {
		return err
	}
	if !s.keep {
		s.Cleanup(func() error {
			_, err := s.script(context.WithoutCancel(ctx), "hack/kind/cluster.sh", "down")
			return err
		})
	}
	s.Show(fmt.Sprintf("cluster %s up in %s (kubeconfig %s)", s.name, took, s.kubeconfig))
	var nodes corev1.NodeList
	if err := s.c.List(ctx, &nodes); err != nil {
		return err
	}
	ready, versions := 0, map[string]bool{}
	s.workers = nil
	for _, n := range nodes.Items {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready++
			}
		}
		versions[n.Status.NodeInfo.KubeletVersion] = true
		if _, cp := n.Labels["node-role.kubernetes.io/control-plane"]; !cp {
			s.workers = append(s.workers, n.Name)
		}
		s.Show(fmt.Sprintf("node %s: kubelet %s, %s, Pod CIDR %s", n.Name, n.Status.NodeInfo.KubeletVersion,
			n.Status.NodeInfo.ContainerRuntimeVersion, n.Spec.PodCIDR))
	}
	slices.Sort(s.workers)
	s.Check("three nodes Ready, two of them workers", len(nodes.Items) == 3 && ready == 3 && len(s.workers) == 2,
		"%d nodes, %d Ready, workers %v", len(nodes.Items), ready, s.workers)
	if !s.Check("every kubelet runs Kubernetes "+s.version, len(versions) == 1 && versions[s.version], "%v", versions) {
		return errCheckFailed
	}
	inj, err := s.chooseInjection()
	if err != nil {
		return err
	}
	s.injection = inj
	s.Show(fmt.Sprintf("sidecar injection: the %s path, %s: %s", s.injection, s.injection.injector(), s.injection.why))
	return nil
}

// waitImages waits for the build of the project's images startCluster
// started and returns its error.
func (s *scenario) waitImages(ctx context.Context) error {
	if s.imagesBuilt == nil {
		return fmt.Errorf("the project's images were not built: the cluster step did not run")
	}
	select {
	case <-s.imagesBuilt:
		return s.imagesErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// loadImages waits for the project's images startCluster builds and loads
// them into the workers, once.
func (s *scenario) loadImages(ctx context.Context) error {
	if s.imagesLoaded {
		return nil
	}
	start := time.Now()
	if err := s.waitImages(ctx); err != nil {
		return err
	}
	waited := time.Since(start).Round(time.Second)
	if _, err := s.script(ctx, "hack/kind/cluster.sh", append([]string{"load"}, images...)...); err != nil {
		return err
	}
	s.imagesLoaded = true
	s.Show(fmt.Sprintf("the project's images built (waited %s for the build) and loaded into the workers in %s",
		waited, time.Since(start).Round(time.Second)))
	return nil
}

func (s *scenario) deploy(ctx context.Context) error {
	if err := s.loadImages(ctx); err != nil {
		return err
	}
	for _, dir := range []string{"deploy/", "deploy/label-syncer"} {
		out, err := s.kubectl(ctx, "", "apply", "-k", dir)
		if err != nil {
			return err
		}
		s.Show("$ kubectl apply -k " + dir + "\n" + indent(out))
	}
	// The MutatingWebhookConfiguration pointing at the plugin-controller's
	// webhook Service: on the webhook path it injects the samples'
	// sidecars; on the policy path the policies, which the API server
	// runs before mutating webhooks, have added them by the time it is
	// called, and it adds nothing to the samples' Pods. On both it
	// injects the probe sidecar, which only it describes, so that every
	// run shows it reachable through its Service with the controller's
	// certificate, and answering while a replica is deleted.
	out, err := s.kubectl(ctx, "", "apply", "-k", "deploy/sidecar-injector")
	if err != nil {
		return err
	}
	s.Show("$ kubectl apply -k deploy/sidecar-injector\n" + indent(out))
	if out, err = s.kubectl(ctx, probeDescription, "apply", "-f", "-"); err != nil {
		return err
	}
	s.Show("the injector probe's description (ConfigMap " + probePlugin + "-sidecar):\n" + indent(out))
	for _, name := range []string{"plugin-controller", "label-syncer"} {
		err := poll(ctx, "Deployment "+name, 4*time.Minute, func() (bool, string, error) {
			var d appsv1.Deployment
			if err := s.c.Get(ctx, client.ObjectKey{Namespace: kubevirtNamespace, Name: name}, &d); err != nil {
				return false, err.Error(), nil
			}
			return d.Status.ReadyReplicas == 2 && d.Status.UpdatedReplicas == 2,
				fmt.Sprintf("%d/2 ready", d.Status.ReadyReplicas), nil
		})
		if !s.Check("Deployment "+name+": 2 of 2 replicas Ready", err == nil, "%s", errText(err)) {
			s.dumpPods(ctx, kubevirtNamespace)
			return errCheckFailed
		}
	}
	if err := s.checkRestricted(ctx); err != nil {
		return err
	}
	for _, lease := range []string{controllerLease, labelSyncerLease} {
		holder, err := s.leaseHolder(ctx, lease)
		s.Check("Lease "+lease+" is held by one of the replicas", err == nil && holder != "", "holder %q%s", holder, errSuffix(err))
	}
	// The webhook is reached through its Service once the controller has
	// written its CA into the configuration: until then the API server
	// cannot call it.
	var refusal string
	err = poll(ctx, "the webhook to refuse an invalid Plugin", 2*time.Minute, func() (bool, string, error) {
		_, err := s.kubectl(ctx, invalidPlugin, "apply", "-f", "-")
		if err == nil {
			return false, "", fmt.Errorf("the API server admitted an invalid Plugin")
		}
		refusal = err.Error()
		return refusedByWebhook(err), refusal, nil
	})
	s.Check("the validating webhook, through its Service, refuses an invalid Plugin naming the field", err == nil,
		"%s", firstLine(refusal))
	if err := s.waitCABundle(ctx); err != nil {
		return err
	}
	if err := s.waitProbeInjected(ctx); err != nil {
		return err
	}
	return s.checkMetrics(ctx)
}

// checkRestricted asks the API server whether the framework's Pods would
// be admitted under the restricted Pod Security level. KubeVirt keeps its
// namespace privileged, for virt-handler, so the Pods of plugin-controller
// and label-syncer are judged elsewhere: each Deployment's Pod template is
// created, with a server-side dry run, in a namespace that enforces
// restricted. The same Pod with allowPrivilegeEscalation on must be
// refused, which shows the namespace enforces.
func (s *scenario) checkRestricted(ctx context.Context) error {
	ns := &corev1.Namespace{}
	ns.Name = restrictedCheckNamespace
	ns.Labels = map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}
	if err := s.c.Create(ctx, ns); client.IgnoreAlreadyExists(err) != nil {
		return err
	}
	for _, name := range []string{"plugin-controller", "label-syncer"} {
		var d appsv1.Deployment
		if err := s.c.Get(ctx, client.ObjectKey{Namespace: kubevirtNamespace, Name: name}, &d); err != nil {
			return err
		}
		pod := &corev1.Pod{Spec: *d.Spec.Template.Spec.DeepCopy()}
		pod.Namespace, pod.GenerateName = restrictedCheckNamespace, name+"-"
		// The ServiceAccount is kubevirt's; the check is about the Pod's
		// security, which does not depend on it.
		pod.Spec.ServiceAccountName, pod.Spec.DeprecatedServiceAccount = "", ""
		err := s.c.Create(ctx, pod, client.DryRunAll)
		s.Check(name+"'s Pod is admitted where the restricted Pod Security level is enforced (server-side dry run)", err == nil, "%s", errText(err))
		escalating := pod.DeepCopy()
		c := &escalating.Spec.Containers[0]
		if c.SecurityContext == nil {
			c.SecurityContext = &corev1.SecurityContext{}
		}
		yes := true
		c.SecurityContext.AllowPrivilegeEscalation = &yes
		err = s.c.Create(ctx, escalating, client.DryRunAll)
		s.Check("the same Pod with allowPrivilegeEscalation: true is refused there", err != nil && strings.Contains(err.Error(), "violates PodSecurity"),
			"%s", errText(err))
	}
	return nil
}

// refusedByWebhook tells the webhook's refusal of invalidPlugin: the
// CRD's schema accepts the Plugin, and only the webhook compiles CEL, so a
// refusal naming the condition's syntax error is the webhook's. (Before
// the controller has written its CA, the API server cannot call it and
// says "failed calling webhook" instead.)
func refusedByWebhook(err error) bool {
	return err != nil && strings.Contains(err.Error(), "spec.condition") && strings.Contains(err.Error(), "Syntax error")
}

// invalidPlugin passes the CRD's schema; only the webhook compiles CEL.
const invalidPlugin = `apiVersion: plugin.kubevirt.io/v1alpha1
kind: Plugin
metadata:
  name: invalid-condition
spec:
  condition: 'vmi.Labels['
  launcherHooks:
  - cel:
      hookPoint: GuestDefinition
      expression: 'Domain{}'
`

func (s *scenario) checkMetrics(ctx context.Context) error {
	if _, err := s.kubectl(ctx, "", "-n", vmNamespace, "create", "serviceaccount", "metrics-scraper"); err != nil {
		return err
	}
	for _, svc := range []string{"plugin-controller-metrics", "label-syncer-metrics"} {
		role := strings.TrimSuffix(svc, "-metrics") + "-metrics-reader"
		if _, err := s.kubectl(ctx, "", "create", "clusterrolebinding", "scraper-"+role, "--clusterrole="+role,
			"--serviceaccount="+vmNamespace+":metrics-scraper"); err != nil {
			return err
		}
	}
	token, err := s.kubectl(ctx, "", "-n", vmNamespace, "create", "token", "metrics-scraper")
	if err != nil {
		return err
	}
	token = strings.TrimSpace(token)
	for _, name := range []string{"plugin-controller-metrics", "label-syncer-metrics"} {
		var svc corev1.Service
		if err := s.c.Get(ctx, client.ObjectKey{Namespace: kubevirtNamespace, Name: name}, &svc); err != nil {
			return err
		}
		url := fmt.Sprintf("https://%s:%d/metrics", svc.Spec.ClusterIP, svc.Spec.Ports[0].Port)
		// Asked until an HTTP answer comes: the Deployment is Ready, but
		// kube-proxy may not route the Service yet (curl: connection
		// refused, HTTP 000), which says nothing about its credentials.
		var anon string
		err1 := poll(ctx, "an HTTP answer from Service "+name, time.Minute, func() (bool, string, error) {
			out, err := s.onNode(ctx, s.workers[0], "curl", "-sk", "-o", "/dev/null", "-w", "%{http_code}", url)
			anon = out
			if err != nil {
				return false, err.Error(), nil
			}
			return anon != "000", "HTTP " + anon, nil
		})
		s.Check("Service "+name+" refuses a request without credentials", err1 == nil && (anon == "401" || anon == "403"),
			"HTTP %s%s", anon, errSuffix(err1))
		var body string
		err2 := poll(ctx, "an authorised metrics answer", time.Minute, func() (bool, string, error) {
			out, err := s.onNode(ctx, s.workers[0], "curl", "-sk", "-w", "\n%{http_code}", "-H", "Authorization: Bearer "+token, url)
			if err != nil {
				return false, err.Error(), nil
			}
			body = out
			return strings.HasSuffix(out, "\n200"), lastLine(out), nil
		})
		s.Check("Service "+name+" answers the metrics-reader's token with metrics", err2 == nil && strings.Contains(body, "# HELP"),
			"%d bytes%s", len(body), errSuffix(err2))
	}
	return nil
}

func (s *scenario) applySamples(ctx context.Context) error {
	var err error
	if s.sidecars, err = s.sampleSidecars(); err != nil {
		return err
	}
	dirs := []string{"sample-sidecars/node-hook-recorder"}
	for _, name := range samples {
		dirs = append(dirs, s.injection.sampleDir(name))
	}
	for _, dir := range dirs {
		out, err := s.kubectl(ctx, "", "apply", "-k", dir)
		if err != nil {
			return err
		}
		s.Show("$ kubectl apply -k " + dir + "\n" + indent(out))
	}
	if _, err := s.kubectl(ctx, kubevirtCELPlugin, "apply", "-f", "-"); err != nil {
		return err
	}
	s.Show("plugin cel-tuning applied (a GuestDefinition CEL hook)")
	daemonSets := []client.ObjectKey{{Namespace: recorderNamespace, Name: "node-hook-recorder"}}
	want := append(slices.Clone(samples), "node-hook-recorder", "cel-tuning")
	err = poll(ctx, "the Plugins to be Ready", 2*time.Minute, func() (bool, string, error) {
		var notReady []string
		for _, name := range want {
			var p pluginv1alpha1.Plugin
			if err := s.c.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil {
				return false, err.Error(), nil
			}
			if !meta.IsStatusConditionTrue(p.Status.Conditions, pluginv1alpha1.ConditionReady) {
				notReady = append(notReady, name)
			}
		}
		return len(notReady) == 0, "not Ready: " + strings.Join(notReady, ", "), nil
	})
	s.Check("Plugins "+strings.Join(want, ", ")+" are Ready", err == nil, "%s", errText(err))
	for _, ds := range daemonSets {
		err := s.waitDaemonSet(ctx, ds)
		if !s.Check("DaemonSet "+ds.String()+" runs on both workers", err == nil, "%s", errText(err)) {
			s.dumpPods(ctx, ds.Namespace)
			return errCheckFailed
		}
	}
	return s.waitInjection(ctx)
}

func (s *scenario) waitDaemonSet(ctx context.Context, key client.ObjectKey) error {
	return poll(ctx, "DaemonSet "+key.String(), 3*time.Minute, func() (bool, string, error) {
		var d appsv1.DaemonSet
		if err := s.c.Get(ctx, key, &d); err != nil {
			return false, err.Error(), nil
		}
		return d.Status.DesiredNumberScheduled == 2 && d.Status.NumberReady == 2 && d.Status.UpdatedNumberScheduled == 2,
			fmt.Sprintf("%d/%d ready", d.Status.NumberReady, d.Status.DesiredNumberScheduled), nil
	})
}

func (s *scenario) leaseHolder(ctx context.Context, name string) (string, error) {
	var l coordinationv1.Lease
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: kubevirtNamespace, Name: name}, &l); err != nil {
		return "", err
	}
	if l.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *l.Spec.HolderIdentity, nil
}

// dumpPods writes the Pods of a namespace, their states and events to the
// log, for a step that failed.
func (s *scenario) dumpPods(ctx context.Context, ns string) {
	ctx = context.WithoutCancel(ctx)
	out, _ := s.kubectl(ctx, "", "-n", ns, "get", "pods", "-o", "wide")
	fmt.Fprintln(s.log, out)
	out, _ = s.kubectl(ctx, "", "-n", ns, "get", "events", "--sort-by=.lastTimestamp")
	fmt.Fprintln(s.log, out)
	var pods corev1.PodList
	if err := s.c.List(ctx, &pods, client.InNamespace(ns)); err == nil {
		for _, p := range pods.Items {
			out, _ := s.kubectl(ctx, "", "-n", ns, "logs", p.Name, "--all-containers", "--tail=50")
			fmt.Fprintf(s.log, "--- logs of %s/%s\n%s\n", ns, p.Name, out)
		}
	}
	s.Show("(the Pods of " + ns + ", their events and logs are in the log)")
}

func indent(s string) string {
	var b strings.Builder
	for line := range strings.SplitSeq(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("  " + line + "\n")
	}
	return b.String()
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

var _ = metav1.Now
