// SPDX-License-Identifier: Apache-2.0

package samples

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/api/sidecarinjection"
	sidecarwebhook "github.com/kubevirt-plugins/framework/plugin-controller/webhooks/sidecar"
	"github.com/kubevirt-plugins/framework/tests/framework/apiserver"
	"github.com/kubevirt-plugins/framework/tests/framework/kustomize"
	"github.com/kubevirt-plugins/framework/tests/framework/poll"
	"github.com/kubevirt-plugins/framework/tests/framework/repo"
)

// The injection paths the tests run on, each on its own API server: the
// samples' MutatingAdmissionPolicies on Kubernetes 1.36, and the
// plugin-controller's webhook (deploy/sidecar-injector) reading the
// samples' ConfigMaps on an API server emulating 1.34, which serves no
// MutatingAdmissionPolicy.
var paths []*injectionPath

// injectionPath is one API server with one way of injecting the samples'
// sidecars.
type injectionPath struct {
	// name is "policy" or "webhook".
	name   string
	server *apiserver.Server
	c      client.Client
	// objects installs the path for a sample: its policy and binding, or
	// its ConfigMap.
	objects func(s *sample) []*unstructured.Unstructured

	once    sync.Once
	err     error
	samples []sample
}

const (
	policyPath  = "policy"
	webhookPath = "webhook"
	// webhookEmulatedVersion is the oldest minor KubeVirt 1.9 supports.
	webhookEmulatedVersion = "1.34"
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	policyServer, err := apiserver.Start(apiserver.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = policyServer.Stop() }()
	webhookServer, stopWebhook, err := startWebhookServer()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stopWebhook()
	paths = []*injectionPath{
		{name: policyPath, server: policyServer, c: policyServer.Client, objects: func(s *sample) []*unstructured.Unstructured { return s.policy }},
		{name: webhookPath, server: webhookServer, c: webhookServer.Client, objects: func(s *sample) []*unstructured.Unstructured { return s.configMap }},
	}
	return m.Run()
}

// startWebhookServer starts an API server emulating 1.34 with
// deploy/sidecar-injector's MutatingWebhookConfiguration, pointed by
// envtest at the plugin-controller's injector served here.
func startWebhookServer() (*apiserver.Server, func(), error) {
	file, err := repo.Path("deploy", "sidecar-injector", "mutatingwebhookconfiguration.yaml")
	if err != nil {
		return nil, nil, err
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, err
	}
	var cfg admissionregistrationv1.MutatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(b, &cfg); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	srv, err := apiserver.Start(apiserver.Options{
		EmulatedVersion:       webhookEmulatedVersion,
		WebhookInstallOptions: envtest.WebhookInstallOptions{MutatingWebhooks: []*admissionregistrationv1.MutatingWebhookConfiguration{&cfg}},
	})
	if err != nil {
		return nil, nil, err
	}
	opts := srv.Env.WebhookInstallOptions
	hook := webhook.NewServer(webhook.Options{Host: opts.LocalServingHost, Port: opts.LocalServingPort, CertDir: opts.LocalServingCertDir})
	hook.Register(sidecarwebhook.Path, &webhook.Admission{Handler: &sidecarwebhook.Injector{Reader: srv.Client, Namespace: controllerNamespace}})
	ctx, cancel := context.WithCancel(context.Background()) //nolint:forbidigo // TestMain has no *testing.T; cancelled when the package's tests end
	done := make(chan error, 1)
	go func() { done <- hook.Start(ctx) }()
	stop := func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "the injection webhook server:", err)
		}
		_ = srv.Stop()
	}
	return srv, stop, nil
}

// namespace holds every Pod the tests create; controllerNamespace the
// ConfigMaps the webhook reads, as deploy/ installs the controller.
const (
	namespace           = "launchers"
	controllerNamespace = "kubevirt"
)

// activationTimeout bounds the wait for a freshly created admission policy
// or webhook to take effect: the API server picks them up asynchronously.
const activationTimeout = 60 * time.Second

// wantSamples are the sidecar samples known to ship a sidecar description;
// the tests fail when one of them is not found, so that a renamed or
// dropped one cannot make them pass vacuously.
var wantSamples = []string{"cloudinit-network", "migration-tuner", "python-guestdefinition", "smbios-watchdog", "template"}

// sample is one sidecar sample with a sidecar description.
type sample struct {
	// name is the directory, the Plugin, the container and the subPath.
	name string
	// optIn is the label that opts a VMI (and its launcher Pod) in.
	optIn string
	// policy is the MutatingAdmissionPolicy and its binding from the
	// sample's kustomization in sample-sidecars/policies.
	policy []*unstructured.Unstructured
	// configMap is the ConfigMap holding sidecar.yaml from the sample's
	// kustomization.
	configMap []*unstructured.Unstructured
	// desc is the sample's sidecar.yaml, parsed.
	desc *sidecarinjection.Sidecar
}

// setup prepares every path's API server once for the package: the
// namespace, the launcher sockets ValidatingAdmissionPolicy and every
// sample's injection, each one waited for until the API server applies
// it. It returns the paths.
func setup(t *testing.T) []*injectionPath {
	t.Helper()
	for _, in := range paths {
		in.once.Do(func() { in.samples, in.err = in.prepare(t.Context()) })
		if in.err != nil {
			t.Fatalf("%s path: %v", in.name, in.err)
		}
	}
	return paths
}

func (in *injectionPath) prepare(ctx context.Context) ([]sample, error) {
	for _, ns := range []string{namespace, controllerNamespace} {
		if err := in.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return nil, fmt.Errorf("creating namespace %s: %w", ns, err)
		}
	}
	// No controller-manager runs here to create the default ServiceAccount
	// that Pod admission asks for.
	if err := in.c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: namespace}}); err != nil {
		return nil, fmt.Errorf("creating ServiceAccount default/%s: %w", namespace, err)
	}
	if err := applySubPathPolicy(ctx, in.c); err != nil {
		return nil, err
	}
	found, err := loadSamples()
	if err != nil {
		return nil, err
	}
	for i := range found {
		for _, o := range in.objects(&found[i]) {
			if err := in.c.Create(ctx, o.DeepCopy()); err != nil {
				return nil, fmt.Errorf("sample %s: creating %s %s: %w", found[i].name, o.GetKind(), o.GetName(), err)
			}
		}
	}
	for _, s := range found {
		if err := waitForInjection(ctx, in.c, s); err != nil {
			return nil, fmt.Errorf("%s path: %w", in.name, err)
		}
	}
	return found, nil
}

// loadSamples builds every sample's kustomizations and keeps the samples
// with a sidecar description: the ConfigMap of the sample's directory and
// the policy of its directory in sample-sidecars/policies.
func loadSamples() ([]sample, error) {
	dir, err := repo.Path("sample-sidecars")
	if err != nil {
		return nil, err
	}
	descriptions, err := filepath.Glob(filepath.Join(dir, "*", sidecarinjection.ConfigMapKey))
	if err != nil {
		return nil, err
	}
	var out []sample
	for _, d := range descriptions {
		name := filepath.Base(filepath.Dir(d))
		s := sample{name: name, optIn: "plugins.example.com/" + name}
		b, err := os.ReadFile(d)
		if err != nil {
			return nil, err
		}
		if s.desc, err = sidecarinjection.Parse(b); err != nil {
			return nil, fmt.Errorf("sample %s: %s: %w", name, d, err)
		}
		for _, k := range []string{filepath.Dir(d), filepath.Join(dir, "policies", name)} {
			objs, err := kustomize.Build(k)
			if err != nil {
				return nil, fmt.Errorf("sample %s: %w", name, err)
			}
			for _, o := range objs {
				switch o.GetKind() {
				case "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding":
					s.policy = append(s.policy, o)
				case "ConfigMap":
					if k == filepath.Dir(d) {
						s.configMap = append(s.configMap, o)
					}
				}
			}
		}
		if len(s.policy) != 2 || len(s.configMap) != 1 {
			return nil, fmt.Errorf("sample %s: kustomizations yield %d policy objects and %d ConfigMaps, want a MutatingAdmissionPolicy, its binding and one ConfigMap",
				name, len(s.policy), len(s.configMap))
		}
		if ns := s.configMap[0].GetNamespace(); ns != controllerNamespace {
			return nil, fmt.Errorf("sample %s: ConfigMap in namespace %q, want %s, where the controller reads it", name, ns, controllerNamespace)
		}
		out = append(out, s)
	}
	var names []string
	for _, s := range out {
		names = append(names, s.name)
	}
	for _, w := range wantSamples {
		if !slices.Contains(names, w) {
			return nil, fmt.Errorf("sample %s: no sidecar description (samples with one: %v)", w, names)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// applySubPathPolicy installs deploy/policies/launcher-sockets-subpath.yaml
// and retries a launcher Pod with a subPath-less sidecar until the API
// server refuses it with the policy's message.
func applySubPathPolicy(ctx context.Context, c client.Client) error {
	path, err := repo.Path("deploy", "policies", "launcher-sockets-subpath.yaml")
	if err != nil {
		return err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for doc := range strings.SplitSeq(string(b), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			return fmt.Errorf("decoding %s: %w", path, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := c.Create(ctx, u); err != nil {
			return fmt.Errorf("creating %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return poll.UntilContext(ctx, activationTimeout, func() error {
		err := subPathPolicyRefuses(ctx, c)
		if err != nil {
			return fmt.Errorf("policy kubevirt-plugin-sockets-subpath not enforced yet: %w", err)
		}
		return nil
	})
}

const subPathPolicyMessage = "must mount volume kubevirt-plugin-sockets with a subPath of exactly one path segment"

// subPathPolicyRefuses returns nil when a launcher Pod whose sidecar mounts
// the whole sockets volume is refused by the subPath policy.
func subPathPolicyRefuses(ctx context.Context, c client.Client) error {
	p := launcherPod("subpath-probe", nil, withSocketsVolume)
	p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
		Name: "greedy", Image: "greedy",
		VolumeMounts: []corev1.VolumeMount{{Name: pluginv1alpha1.SocketsVolumeName, MountPath: pluginv1alpha1.SocketsRoot}},
	})
	err := c.Create(ctx, p, client.DryRunAll)
	switch {
	case err == nil:
		return fmt.Errorf("Pod %s with a sidecar mounting the whole sockets volume admitted", p.Name)
	case !strings.Contains(err.Error(), subPathPolicyMessage):
		return fmt.Errorf("Pod %s refused for another reason: %w", p.Name, err)
	}
	return nil
}

// waitForInjection retries an opted-in launcher Pod (dry run) until it
// comes back with the sample's sidecar.
func waitForInjection(ctx context.Context, c client.Client, s sample) error {
	return poll.UntilContext(ctx, activationTimeout, func() error {
		p := launcherPod("inject-probe-"+s.name, map[string]string{s.optIn: ""}, withSocketsVolume)
		if err := c.Create(ctx, p, client.DryRunAll); err != nil {
			return fmt.Errorf("sample %s: probe Pod refused: %w", s.name, err)
		}
		if sidecar(p, s.name) == nil {
			return fmt.Errorf("sample %s: injection not active yet, probe Pod has no %s init container", s.name, s.name)
		}
		return nil
	})
}
