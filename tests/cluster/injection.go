// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/api/sidecarinjection"
)

// injectionEnv overrides the choice of the injection path: policy or
// webhook.
const injectionEnv = "KVP_INJECTION"

// sidecarInjector is the MutatingWebhookConfiguration deploy/sidecar-injector
// installs; the samples' Plugins reference it on the webhook path.
const sidecarInjector = "kubevirt-plugin-sidecar-injector"

// injection is how the samples' sidecars reach the launcher Pods on this
// cluster: the MutatingAdmissionPolicies of sample-sidecars/policies/<name>,
// or the plugin-controller's webhook (deploy/sidecar-injector) reading the
// ConfigMaps of sample-sidecars/<name>. Both come from one description per
// sample (sidecar.yaml).
type injection struct {
	policy bool
	// why says what decided the path.
	why string
}

func (i injection) String() string {
	if i.policy {
		return "policy"
	}
	return "webhook"
}

// injector names what adds the sidecars, for the transcript.
func (i injection) injector() string {
	if i.policy {
		return "the samples' MutatingAdmissionPolicies"
	}
	return "the plugin-controller's injection webhook"
}

// sampleDir is the kustomization a sample is applied from.
func (i injection) sampleDir(name string) string {
	if i.policy {
		return "sample-sidecars/policies/" + name
	}
	return "sample-sidecars/" + name
}

// chooseInjection picks the path: KVP_INJECTION when set, else the policy
// path when the API server serves MutatingAdmissionPolicy in
// admissionregistration.k8s.io/v1 (Kubernetes 1.36 on, or an earlier
// minor with its feature gate and API on), else the webhook path.
func (s *scenario) chooseInjection() (injection, error) {
	served, err := servesMutatingAdmissionPolicy(s.cfg)
	if err != nil {
		return injection{}, err
	}
	servedText := "the API server does not serve admissionregistration.k8s.io/v1 MutatingAdmissionPolicy"
	if served {
		servedText = "the API server serves admissionregistration.k8s.io/v1 MutatingAdmissionPolicy"
	}
	switch v := os.Getenv(injectionEnv); v {
	case "":
		return injection{policy: served, why: servedText + " (discovery)"}, nil
	case "policy", "webhook":
		return injection{policy: v == "policy", why: injectionEnv + "=" + v + "; " + servedText}, nil
	default:
		return injection{}, fmt.Errorf("%s=%s: want policy or webhook", injectionEnv, v)
	}
}

func servesMutatingAdmissionPolicy(cfg *rest.Config) (bool, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, err
	}
	list, err := dc.ServerResourcesForGroupVersion(admissionregistrationv1.SchemeGroupVersion.String())
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", admissionregistrationv1.SchemeGroupVersion, err)
	}
	for _, r := range list.APIResources {
		if r.Kind == "MutatingAdmissionPolicy" && !strings.Contains(r.Name, "/") {
			return true, nil
		}
	}
	return false, nil
}

// sampleSidecars reads the samples' sidecar descriptions, which both paths
// inject from.
func (e *env) sampleSidecars() (map[string]*sidecarinjection.Sidecar, error) {
	out := map[string]*sidecarinjection.Sidecar{}
	for _, name := range samples {
		p := filepath.Join(e.root, "sample-sidecars", name, "sidecar.yaml")
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		sc, err := sidecarinjection.Parse(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out[name] = sc
	}
	return out, nil
}

// probePod is a launcher Pod labelled for every sample's sidecar, created
// with a server-side dry run: admission runs in full, nothing is stored.
func probePod() *corev1.Pod {
	return dryRunLauncherPod("injection-probe", templateLabels())
}

// dryRunLauncherPod is a Pod shaped as KubeVirt's virt-launcher Pods are
// where the injection looks (the label kubevirt.io=virt-launcher, the
// plugin sockets volume mounted in compute), for a server-side dry run
// only: its image is never pulled.
func dryRunLauncherPod(name string, labels map[string]string) *corev1.Pod {
	l := map[string]string{"kubevirt.io": "virt-launcher", "vm.kubevirt.io/name": name}
	maps.Copy(l, labels)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: vmNamespace, Name: "virt-launcher-" + name + "-dry-run", Labels: l},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: new(bool),
			Containers: []corev1.Container{{
				Name: "compute", Image: "virt-launcher:dry-run-only",
				VolumeMounts: []corev1.VolumeMount{{Name: pluginv1alpha1.SocketsVolumeName, MountPath: pluginv1alpha1.SocketsRoot}},
			}},
			Volumes: []corev1.Volume{{Name: pluginv1alpha1.SocketsVolumeName, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
}

// nativeSidecars lists the Pod's restartable init containers, sorted.
func nativeSidecars(pod *corev1.Pod) []string {
	var native []string
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			native = append(native, c.Name)
		}
	}
	slices.Sort(native)
	return native
}

// waitInjection creates the probe Pod with a server-side dry run until the
// three sidecars come back in it: on the webhook path the API server can
// call the webhook only once the controller has written its CA into the
// configuration, and the webhook has read the samples' ConfigMaps; on the
// policy path the API server loads the policies asynchronously too.
func (s *scenario) waitInjection(ctx context.Context) error {
	start := time.Now()
	var got []string
	err := poll(ctx, s.injection.injector()+" to answer", 3*time.Minute, func() (bool, string, error) {
		pod := probePod()
		if err := s.c.Create(ctx, pod, client.DryRunAll); err != nil {
			return false, firstLine(err.Error()), nil
		}
		got = nativeSidecars(pod)
		return slices.Equal(got, samples), fmt.Sprintf("native sidecars %v", got), nil
	})
	s.Check(fmt.Sprintf("a launcher Pod created with a server-side dry run comes back with %s, added by %s", strings.Join(samples, ", "), s.injection.injector()),
		err == nil, "answered after %s, sidecars %v%s", time.Since(start).Round(100*time.Millisecond), got, errSuffix(err))
	if err != nil {
		if !s.injection.policy {
			s.dumpPods(ctx, kubevirtNamespace)
		}
		return errCheckFailed
	}
	return nil
}

// waitCABundle waits until the plugin-controller has written its CA into
// the injection webhook's configuration, which it does after it starts.
func (s *scenario) waitCABundle(ctx context.Context) error {
	start := time.Now()
	err := poll(ctx, "the CA of "+sidecarInjector, 2*time.Minute, func() (bool, string, error) {
		var cfg admissionregistrationv1.MutatingWebhookConfiguration
		if err := s.c.Get(ctx, client.ObjectKey{Name: sidecarInjector}, &cfg); err != nil {
			return false, err.Error(), nil
		}
		for _, w := range cfg.Webhooks {
			if len(w.ClientConfig.CABundle) == 0 {
				return false, "webhook " + w.Name + " has no caBundle yet", nil
			}
		}
		return len(cfg.Webhooks) > 0, "no webhooks", nil
	})
	s.Check("the plugin-controller wrote its CA into MutatingWebhookConfiguration "+sidecarInjector, err == nil,
		"after %s%s", time.Since(start).Round(100*time.Millisecond), errSuffix(err))
	return nil
}

// The injector probe: a sidecar only the webhook describes (no policy
// names it), asked for by launcher Pods created with a server-side dry
// run, so its container never runs.
const (
	probePlugin      = "injector-probe"
	probeLabel       = "plugins.example.com/" + probePlugin
	probeDescription = `apiVersion: v1
kind: ConfigMap
metadata:
  name: ` + probePlugin + `-sidecar
  namespace: kubevirt
  labels:
    plugin.kubevirt.io/sidecar: ` + probePlugin + `
data:
  sidecar.yaml: |
    plugin: ` + probePlugin + `
    label: ` + probeLabel + `
    image: kvp-injector-probe:dry-run-only
`
)

// probeInjected creates, with a server-side dry run, a launcher Pod asking
// for the probe sidecar alone, and tells whether the webhook added it.
func (s *scenario) probeInjected(ctx context.Context) (bool, error) {
	pod := dryRunLauncherPod("injector-probe", map[string]string{probeLabel: ""})
	if err := s.c.Create(ctx, pod, client.DryRunAll); err != nil {
		return false, err
	}
	return slices.Contains(nativeSidecars(pod), probePlugin), nil
}

// waitProbeInjected waits until the webhook, reached through its Service,
// adds the probe sidecar: it has the controller's CA and has read the
// probe's ConfigMap.
func (s *scenario) waitProbeInjected(ctx context.Context) error {
	start := time.Now()
	err := poll(ctx, "the injection webhook to add the probe sidecar", 2*time.Minute, func() (bool, string, error) {
		ok, err := s.probeInjected(ctx)
		if err != nil {
			return false, firstLine(err.Error()), nil
		}
		return ok, "no " + probePlugin + " sidecar", nil
	})
	s.Check("the injection webhook, through its Service, adds a sidecar described only by its ConfigMap (dry run)", err == nil,
		"after %s%s", time.Since(start).Round(100*time.Millisecond), errSuffix(err))
	if err != nil {
		s.dumpPods(ctx, kubevirtNamespace)
		return errCheckFailed
	}
	return nil
}
