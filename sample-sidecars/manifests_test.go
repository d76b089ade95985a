// SPDX-License-Identifier: Apache-2.0

package samples

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt-plugins/framework/api/celenv"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/api/plugin/v1alpha1/validation"
	"github.com/kubevirt-plugins/framework/api/sidecarinjection"
)

// injectorWebhook is the MutatingWebhookConfiguration of
// deploy/sidecar-injector, which the samples' Plugins reference.
const injectorWebhook = "kubevirt-plugin-sidecar-injector"

// samples lists every sample directory; a new one must be added here.
var samples = []string{"smbios-watchdog", "cloudinit-network", "migration-tuner", "node-hook-recorder", "template"}

// nonGoSamples are samples in another language: their manifests are
// checked like the others', their program is not a Go binary.
var nonGoSamples = []string{"python-guestdefinition"}

func allSamples() []string { return append(slices.Clone(samples), nonGoSamples...) }

func TestEverySampleDirectoryIsListed(t *testing.T) {
	dockerfiles, err := filepath.Glob("*/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dockerfiles {
		if !slices.Contains(samples, filepath.Dir(d)) {
			t.Errorf("%s is not in the samples list of this test", filepath.Dir(d))
		}
	}
}

func readFile(t *testing.T, parts ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(parts...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func documents(b []byte) [][]byte {
	var out [][]byte
	for _, d := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
		if strings.TrimSpace(d) != "" {
			out = append(out, []byte(d))
		}
	}
	return out
}

func loadPlugin(t *testing.T, dir string) *pluginv1alpha1.Plugin {
	t.Helper()
	p := &pluginv1alpha1.Plugin{}
	if err := yaml.UnmarshalStrict(readFile(t, dir, "plugin.yaml"), p); err != nil {
		t.Fatalf("%s/plugin.yaml: %v", dir, err)
	}
	return p
}

func TestPluginManifestsAreValid(t *testing.T) {
	for _, dir := range allSamples() {
		t.Run(dir, func(t *testing.T) {
			p := loadPlugin(t, dir)
			if p.Name != dir {
				t.Errorf("Plugin name %q, want the directory name %q", p.Name, dir)
			}
			if errs := validation.Plugin(p); len(errs) > 0 {
				t.Errorf("Plugin invalid: %v", errs.ToAggregate())
			}
			for i, h := range p.Spec.LauncherHooks {
				if h.Sidecar != nil && h.Sidecar.SocketPath != pluginv1alpha1.PluginDir(p.Name)+"hook.sock" {
					t.Errorf("launcherHooks[%d] socket %s, want the SDK's default in the plugin directory", i, h.Sidecar.SocketPath)
				}
			}
		})
	}
}

// loadInjectionPolicy decodes the sample's injection-policy.yaml: its
// MutatingAdmissionPolicy and binding, nil when absent.
func loadInjectionPolicy(t *testing.T, dir string) (*admissionv1.MutatingAdmissionPolicy, *admissionv1.MutatingAdmissionPolicyBinding) {
	t.Helper()
	var policy *admissionv1.MutatingAdmissionPolicy
	var binding *admissionv1.MutatingAdmissionPolicyBinding
	for _, doc := range documents(readFile(t, "policies", dir, "injection-policy.yaml")) {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "MutatingAdmissionPolicy":
			policy = &admissionv1.MutatingAdmissionPolicy{}
			if err := yaml.UnmarshalStrict(doc, policy); err != nil {
				t.Fatalf("policy: %v", err)
			}
		case "MutatingAdmissionPolicyBinding":
			binding = &admissionv1.MutatingAdmissionPolicyBinding{}
			if err := yaml.UnmarshalStrict(doc, binding); err != nil {
				t.Fatalf("binding: %v", err)
			}
		default:
			t.Fatalf("unexpected kind %q", meta.Kind)
		}
	}
	return policy, binding
}

func TestInjectionPoliciesMountOnlyThePluginDirectory(t *testing.T) {
	for _, dir := range allSamples() {
		p := loadPlugin(t, dir)
		if len(p.Spec.LauncherHooks) == 0 {
			continue
		}
		t.Run(dir, func(t *testing.T) {
			policy, binding := loadInjectionPolicy(t, dir)
			if policy == nil || binding == nil {
				t.Fatal("want a MutatingAdmissionPolicy and its binding")
			}
			if policy.APIVersion != "admissionregistration.k8s.io/v1" || binding.Spec.PolicyName != policy.Name {
				t.Errorf("apiVersion %s, binding to %q; want v1 and a binding to %q", policy.APIVersion, binding.Spec.PolicyName, policy.Name)
			}
			// The policy overlay makes the Plugin reference the policy
			// in place of the webhook.
			overlay := string(readFile(t, "policies", dir, "kustomization.yaml"))
			for _, want := range []string{"path: /spec/mutatingAdmissionWebhooks", "path: /spec/mutatingAdmissionPolicies", "- name: " + policy.Name + "\n"} {
				if !strings.Contains(overlay, want) {
					t.Errorf("policies/%s/kustomization.yaml lacks %q: the Plugin would not reference its policy %s", dir, want, policy.Name)
				}
			}
			if !slices.ContainsFunc(p.Spec.MutatingAdmissionWebhooks, func(r pluginv1alpha1.AdmissionReference) bool { return r.Name == injectorWebhook }) {
				t.Errorf("Plugin does not reference the injection webhook %s", injectorWebhook)
			}
			sel := policy.Spec.MatchConstraints.ObjectSelector
			if sel == nil || sel.MatchLabels["kubevirt.io"] != "virt-launcher" {
				t.Errorf("objectSelector %v, want kubevirt.io=virt-launcher", sel)
			}
			// The Plugin applies to the VMIs the policy injects into: the
			// opt-in label of the condition is the one the policy matches.
			optIn := "plugins.example.com/" + p.Name
			if !strings.Contains(p.Spec.Condition, `"`+optIn+`"`) {
				t.Errorf("Plugin condition %q does not test the opt-in label %s", p.Spec.Condition, optIn)
			}
			if sel == nil || len(sel.MatchExpressions) != 1 || sel.MatchExpressions[0].Key != optIn || sel.MatchExpressions[0].Operator != metav1.LabelSelectorOpExists {
				t.Errorf("objectSelector %v does not select the opt-in label %s", sel, optIn)
			}
			desc, err := sidecarinjection.Parse(readFile(t, dir, "sidecar.yaml"))
			if err != nil {
				t.Fatalf("sidecar.yaml: %v", err)
			}
			if desc.Plugin != p.Name || desc.Label != optIn {
				t.Errorf("sidecar.yaml names plugin %q and label %q, want %q and %q", desc.Plugin, desc.Label, p.Name, optIn)
			}
			if got, want := string(readFile(t, "policies", dir, "injection-policy.yaml")), desc.Policy("sidecar.yaml"); got != want {
				t.Errorf("policies/%s/injection-policy.yaml is not what %s/sidecar.yaml gives: run make generate", dir, dir)
			}
			// An apply configuration may not set the atomic lists a
			// sidecar needs (args, capabilities.drop): the API server
			// refuses it when it mutates a Pod.
			if len(policy.Spec.Mutations) != 1 || policy.Spec.Mutations[0].PatchType != admissionv1.PatchTypeJSONPatch || policy.Spec.Mutations[0].JSONPatch == nil {
				t.Fatal("want one JSONPatch mutation")
			}
			expr := policy.Spec.Mutations[0].JSONPatch.Expression
			for _, want := range []string{
				`name: "` + pluginv1alpha1.SocketsVolumeName + `"`,
				`mountPath: "` + strings.TrimSuffix(pluginv1alpha1.PluginDir(p.Name), "/") + `"`,
				`subPath: "` + p.Name + `"`,
				`image: "kvp-` + p.Name + `:latest"`,
				// "add" to /spec/volumes/- fails on a Pod without volumes.
				`path: "/spec/volumes", value: []`,
			} {
				if !strings.Contains(expr, want) {
					t.Errorf("mutation lacks %s", want)
				}
			}
		})
	}
}

// TestInjectionPoliciesAddANativeSidecar: the sidecar is an init
// container with restartPolicy Always, which the kubelet stops once compute
// has exited, so that the launcher Pod completes with its VM; the patch
// creates spec.initContainers when absent, and the policy skips a Pod
// that has a container of that name in either list. tests/samples shows
// the API server's output.
func TestInjectionPoliciesAddANativeSidecar(t *testing.T) {
	for _, dir := range allSamples() {
		p := loadPlugin(t, dir)
		if len(p.Spec.LauncherHooks) == 0 {
			continue
		}
		t.Run(dir, func(t *testing.T) {
			policy, _ := loadInjectionPolicy(t, dir)
			if policy == nil || len(policy.Spec.Mutations) != 1 || policy.Spec.Mutations[0].JSONPatch == nil {
				t.Fatal("want a MutatingAdmissionPolicy with one JSONPatch mutation")
			}
			// Whitespace as one space: the YAML folds some line breaks.
			expr := strings.Join(strings.Fields(policy.Spec.Mutations[0].JSONPatch.Expression), " ")
			for _, want := range []string{
				`path: "/spec/initContainers/-"`,
				`value: Object.spec.initContainers{ name: "` + p.Name + `",`,
				`restartPolicy: "Always",`,
				// "add" to /spec/initContainers/- fails on a Pod without init containers.
				`path: "/spec/initContainers", value: []`,
			} {
				if !strings.Contains(expr, want) {
					t.Errorf("mutation lacks %q", want)
				}
			}
			if strings.Contains(expr, "/spec/containers") {
				t.Error("mutation adds to spec.containers: a sidecar there keeps the launcher Pod running after the VM stops")
			}
			var notInjected string
			for _, c := range policy.Spec.MatchConditions {
				if strings.Contains(c.Expression, "c.name == \""+p.Name+"\"") {
					notInjected = c.Expression
				}
			}
			for _, list := range []string{"object.spec.containers.exists(", "object.spec.initContainers.exists("} {
				if !strings.Contains(notInjected, list) {
					t.Errorf("match condition %q does not look for a %s container in %s", notInjected, p.Name, list)
				}
			}
		})
	}
}

func TestNodeHookDaemonSetServesThePluginSocket(t *testing.T) {
	for _, dir := range allSamples() {
		p := loadPlugin(t, dir)
		if len(p.Spec.NodeHooks) == 0 {
			continue
		}
		t.Run(dir, func(t *testing.T) {
			ds := &appsv1.DaemonSet{}
			if err := yaml.UnmarshalStrict(readFile(t, dir, "daemonset.yaml"), ds); err != nil {
				t.Fatal(err)
			}
			c := ds.Spec.Template.Spec.Containers[0]
			for _, h := range p.Spec.NodeHooks {
				if !strings.HasPrefix(h.Socket, pluginv1alpha1.NodeHookSocketsRoot+"/") {
					t.Errorf("socket %s is not under %s, where virt-handler dials node hooks by default", h.Socket, pluginv1alpha1.NodeHookSocketsRoot)
				}
				if !slices.Contains(c.Args, "--socket="+h.Socket) {
					t.Errorf("container args %v do not serve %s", c.Args, h.Socket)
				}
				sockDir := filepath.Dir(h.Socket)
				ok := slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
					if m.MountPath != sockDir {
						return false
					}
					for _, v := range ds.Spec.Template.Spec.Volumes {
						if v.Name == m.Name && v.HostPath != nil && v.HostPath.Path == sockDir {
							return true
						}
					}
					return false
				})
				if !ok {
					t.Errorf("socket directory %s is not the same host path in the container", sockDir)
				}
			}
		})
	}
}

func TestKustomizationsListTheManifests(t *testing.T) {
	for _, dir := range allSamples() {
		t.Run(dir, func(t *testing.T) {
			var k struct {
				Resources []string `json:"resources"`
			}
			if err := yaml.Unmarshal(readFile(t, dir, "kustomization.yaml"), &k); err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(k.Resources, "plugin.yaml") {
				t.Errorf("resources %v lack plugin.yaml", k.Resources)
			}
			for _, r := range k.Resources {
				if _, err := os.Stat(filepath.Join(dir, r)); err != nil {
					t.Errorf("resource %s: %v", r, err)
				}
			}
			if len(loadPlugin(t, dir).Spec.NodeHooks) > 0 {
				if !slices.Contains(k.Resources, "daemonset.yaml") {
					t.Errorf("resources %v lack daemonset.yaml", k.Resources)
				}
				return
			}
			// The sidecar description becomes the ConfigMap the webhook
			// reads: in its namespace, with its label.
			var gen struct {
				ConfigMapGenerator []struct {
					Name, Namespace string
					Files           []string
					Options         struct {
						DisableNameSuffixHash bool              `json:"disableNameSuffixHash"`
						Labels                map[string]string `json:"labels"`
					}
				} `json:"configMapGenerator"`
			}
			if err := yaml.Unmarshal(readFile(t, dir, "kustomization.yaml"), &gen); err != nil {
				t.Fatal(err)
			}
			if g := gen.ConfigMapGenerator; len(g) != 1 || g[0].Namespace != "kubevirt" || !slices.Equal(g[0].Files, []string{sidecarinjection.ConfigMapKey}) ||
				g[0].Options.Labels[sidecarinjection.ConfigMapLabel] != dir || !g[0].Options.DisableNameSuffixHash {
				t.Errorf("configMapGenerator %+v, want one ConfigMap of %s in namespace kubevirt labelled %s=%s", g, sidecarinjection.ConfigMapKey, sidecarinjection.ConfigMapLabel, dir)
			}
			var overlay struct {
				Resources []string `json:"resources"`
			}
			if err := yaml.Unmarshal(readFile(t, "policies", dir, "kustomization.yaml"), &overlay); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(overlay.Resources, []string{"../../" + dir, "injection-policy.yaml"}) {
				t.Errorf("policies/%s resources %v, want ../../%s and injection-policy.yaml", dir, overlay.Resources, dir)
			}
		})
	}
}

func TestDockerfilesCopyAStaticBinaryIntoScratch(t *testing.T) {
	for _, dir := range samples {
		t.Run(dir, func(t *testing.T) {
			df := readFile(t, dir, "Dockerfile")
			for _, want := range []string{"\nFROM scratch\n", "\nCOPY bin/" + dir + " /" + dir + "\n", "CGO_ENABLED=0 go build -trimpath -o " + dir + "/bin/" + dir + " ./" + dir + "/cmd/" + dir} {
				if !bytes.Contains(df, []byte(want)) {
					t.Errorf("Dockerfile lacks %q", strings.TrimSpace(want))
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "cmd", dir, "main.go")); err != nil {
				t.Errorf("no cmd/%s/main.go: %v", dir, err)
			}
		})
	}
}

var flagPattern = regexp.MustCompile(`flag\.[A-Za-z]+\("([^"]+)"`)

func TestReadmesDocumentEveryFlag(t *testing.T) {
	for _, dir := range samples {
		t.Run(dir, func(t *testing.T) {
			readme := string(readFile(t, dir, "README.md"))
			main := readFile(t, dir, "cmd", dir, "main.go")
			for _, m := range flagPattern.FindAllSubmatch(main, -1) {
				name := string(m[1])
				dash := "--"
				if len(name) == 1 {
					dash = "-"
				}
				if !strings.Contains(readme, "`"+dash+name+"`") {
					t.Errorf("README.md does not document flag %s%s", dash, name)
				}
			}
			if !strings.Contains(readme, "CGO_ENABLED=0 go build") || !strings.Contains(readme, "docker build") {
				t.Error("README.md lacks the build commands")
			}
		})
	}
}

func TestPluginConditionsSelectOptedInVMIs(t *testing.T) {
	env, err := celenv.New(celenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range allSamples() {
		p := loadPlugin(t, dir)
		if p.Spec.Condition == "" {
			continue
		}
		t.Run(dir, func(t *testing.T) {
			cond, err := env.Condition(p.Spec.Condition)
			if err != nil {
				t.Fatalf("condition %q: %v", p.Spec.Condition, err)
			}
			for _, tc := range []struct {
				labels map[string]string
				want   bool
			}{
				{map[string]string{"plugins.example.com/" + p.Name: "enabled"}, true},
				{map[string]string{"app": "db"}, false},
				{nil, false},
			} {
				vmi := &kubevirtv1.VirtualMachineInstance{}
				vmi.Labels = tc.labels
				got, err := cond.Eval(t.Context(), vmi)
				if err != nil || got != tc.want {
					t.Errorf("labels %v: condition = %v, %v; want %v", tc.labels, got, err, tc.want)
				}
			}
		})
	}
}

// TestEveryImageRunsAsANonRootUser: each Go sample's Dockerfile, like the
// controllers', ends with a USER that is neither root nor unset, so the
// image runs as non-root wherever nothing else is asked for. (The Python
// sample's Dockerfile is written by hack/build-python-image.sh, as USER
// 107:107.)
func TestEveryImageRunsAsANonRootUser(t *testing.T) {
	files := []string{"../plugin-controller/Dockerfile", "../label-syncer/Dockerfile"}
	for _, s := range samples {
		files = append(files, filepath.Join(s, "Dockerfile"))
	}
	userLine := regexp.MustCompile(`(?m)^USER\s+(\S+)\s*$`)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		users := userLine.FindAllStringSubmatch(string(data), -1)
		if len(users) == 0 {
			t.Errorf("%s: no USER line; the image would run as root", f)
			continue
		}
		user, _, _ := strings.Cut(users[len(users)-1][1], ":")
		if user == "0" || user == "root" {
			t.Errorf("%s: USER %s runs the image as root", f, users[len(users)-1][1])
		}
	}
}
