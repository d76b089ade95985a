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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/tests/framework/apiserver"
	"github.com/kubevirt-plugins/framework/tests/framework/poll"
	"github.com/kubevirt-plugins/framework/tests/framework/repo"
)

// The API server shared by the package's tests.
var (
	server *apiserver.Server
	admin  client.Client
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	server, err = apiserver.Start(apiserver.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = server.Stop() }()
	admin = server.Client
	return m.Run()
}

// namespace holds every Pod the tests create.
const namespace = "launchers"

// activationTimeout bounds the wait for a freshly created admission policy
// to take effect: the API server picks policies up asynchronously.
const activationTimeout = 60 * time.Second

// wantSamples are the sidecar samples known to ship an injection policy;
// the tests fail when one of them is not found, so that a renamed or
// dropped policy cannot make them pass vacuously.
var wantSamples = []string{"cloudinit-network", "migration-tuner", "python-guestdefinition", "smbios-watchdog", "template"}

// sample is one sidecar sample with an injection policy.
type sample struct {
	// name is the directory, the Plugin, the container and the subPath.
	name string
	// optIn is the label that opts a VMI (and its launcher Pod) in.
	optIn string
	// policy is the MutatingAdmissionPolicy and its binding from the
	// sample's kustomization.
	policy []*unstructured.Unstructured
}

var (
	setupOnce sync.Once
	setupErr  error
	samples   []sample
)

// setup prepares the API server once for the package: the namespace, the
// launcher sockets ValidatingAdmissionPolicy and every sample's injection
// policy, each one waited for until the API server enforces it.
func setup(t *testing.T) []sample {
	t.Helper()
	setupOnce.Do(func() { samples, setupErr = prepare(t.Context()) })
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	return samples
}

func prepare(ctx context.Context) ([]sample, error) {
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		return nil, fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	// No controller-manager runs here to create the default ServiceAccount
	// that Pod admission asks for.
	if err := admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: namespace}}); err != nil {
		return nil, fmt.Errorf("creating ServiceAccount default/%s: %w", namespace, err)
	}
	if err := applySubPathPolicy(ctx); err != nil {
		return nil, err
	}
	found, err := loadSamples()
	if err != nil {
		return nil, err
	}
	for _, s := range found {
		for _, o := range s.policy {
			if err := admin.Create(ctx, o); err != nil {
				return nil, fmt.Errorf("sample %s: creating %s %s: %w", s.name, o.GetKind(), o.GetName(), err)
			}
		}
	}
	for _, s := range found {
		if err := waitForInjection(ctx, s); err != nil {
			return nil, err
		}
	}
	return found, nil
}

// loadSamples builds every sample's kustomization and keeps the samples
// whose output holds a MutatingAdmissionPolicy.
func loadSamples() ([]sample, error) {
	dir, err := repo.Path("sample-sidecars")
	if err != nil {
		return nil, err
	}
	kustomizations, err := filepath.Glob(filepath.Join(dir, "*", "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	var out []sample
	for _, k := range kustomizations {
		name := filepath.Base(filepath.Dir(k))
		objs, err := kustomize(filepath.Dir(k))
		if err != nil {
			return nil, fmt.Errorf("sample %s: %w", name, err)
		}
		s := sample{name: name, optIn: "plugins.example.com/" + name}
		for _, o := range objs {
			switch o.GetKind() {
			case "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding":
				s.policy = append(s.policy, o)
			}
		}
		if len(s.policy) == 0 {
			continue
		}
		if len(s.policy) != 2 {
			return nil, fmt.Errorf("sample %s: kustomization yields %d policy objects, want a MutatingAdmissionPolicy and its binding", name, len(s.policy))
		}
		out = append(out, s)
	}
	var names []string
	for _, s := range out {
		names = append(names, s.name)
	}
	for _, w := range wantSamples {
		if !slices.Contains(names, w) {
			return nil, fmt.Errorf("sample %s: no injection policy in its kustomization (samples with one: %v)", w, names)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// kustomize builds a kustomization directory into objects.
func kustomize(dir string) ([]*unstructured.Unstructured, error) {
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range rm.Resources() {
		b, err := r.MarshalJSON()
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(b); err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

// applySubPathPolicy installs deploy/policies/launcher-sockets-subpath.yaml
// and retries a launcher Pod with a subPath-less sidecar until the API
// server refuses it with the policy's message.
func applySubPathPolicy(ctx context.Context) error {
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
		if err := admin.Create(ctx, u); err != nil {
			return fmt.Errorf("creating %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return poll.UntilContext(ctx, activationTimeout, func() error {
		err := subPathPolicyRefuses(ctx)
		if err != nil {
			return fmt.Errorf("policy kubevirt-plugin-sockets-subpath not enforced yet: %w", err)
		}
		return nil
	})
}

const subPathPolicyMessage = "must mount volume kubevirt-plugin-sockets with a subPath of exactly one path segment"

// subPathPolicyRefuses returns nil when a launcher Pod whose sidecar mounts
// the whole sockets volume is refused by the subPath policy.
func subPathPolicyRefuses(ctx context.Context) error {
	p := launcherPod("subpath-probe", nil, withSocketsVolume)
	p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
		Name: "greedy", Image: "greedy",
		VolumeMounts: []corev1.VolumeMount{{Name: pluginv1alpha1.SocketsVolumeName, MountPath: pluginv1alpha1.SocketsRoot}},
	})
	err := admin.Create(ctx, p, client.DryRunAll)
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
func waitForInjection(ctx context.Context, s sample) error {
	return poll.UntilContext(ctx, activationTimeout, func() error {
		p := launcherPod("inject-probe-"+s.name, map[string]string{s.optIn: ""}, withSocketsVolume)
		if err := admin.Create(ctx, p, client.DryRunAll); err != nil {
			return fmt.Errorf("sample %s: probe Pod refused: %w", s.name, err)
		}
		if sidecar(p, s.name) == nil {
			return fmt.Errorf("sample %s: policy not active yet, probe Pod has no %s init container", s.name, s.name)
		}
		return nil
	})
}
