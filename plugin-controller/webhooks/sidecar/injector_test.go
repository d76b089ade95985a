// SPDX-License-Identifier: Apache-2.0

package sidecar_test

import (
	"encoding/json"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kubevirt-plugins/framework/api/sidecarinjection"
	"github.com/kubevirt-plugins/framework/plugin-controller/webhooks/sidecar"
)

func description(name, plugin, doc string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: name, ResourceVersion: "1",
			Labels: map[string]string{sidecarinjection.ConfigMapLabel: plugin}},
		Data: map[string]string{sidecarinjection.ConfigMapKey: doc},
	}
}

const valid = "plugin: good\nlabel: plugins.example.com/good\nimage: good:v1\n"

func injector(objs ...*corev1.ConfigMap) *sidecar.Injector {
	b := fake.NewClientBuilder()
	for _, o := range objs {
		b = b.WithObjects(o)
	}
	return &sidecar.Injector{Reader: b.Build(), Namespace: "kubevirt"}
}

func podRequest(t *testing.T, labels map[string]string) (admission.Request, *corev1.Pod) {
	t.Helper()
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "virt-launcher-vm", Namespace: "vms", Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "compute", Image: "virt-launcher"}}},
	}
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Namespace: "vms", Object: runtime.RawExtension{Raw: raw},
	}}, pod
}

func launcherLabels(extra ...string) map[string]string {
	l := map[string]string{"kubevirt.io": "virt-launcher"}
	for _, k := range extra {
		l[k] = ""
	}
	return l
}

func TestInjectorAddsTheDescribedSidecar(t *testing.T) {
	req, _ := podRequest(t, launcherLabels("plugins.example.com/good"))
	resp := injector(description("good-sidecar", "good", valid)).Handle(t.Context(), req)
	if !resp.Allowed || len(resp.Patches) == 0 {
		t.Fatalf("response %+v, want allowed with a patch", resp.Result)
	}
	patch, err := json.Marshal(resp.Patches)
	if err != nil {
		t.Fatal(err)
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Apply(req.Object.Raw)
	if err != nil {
		t.Fatalf("the patch does not apply: %v", err)
	}
	var got corev1.Pod
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.InitContainers) != 1 || got.Spec.InitContainers[0].Name != "good" || got.Spec.InitContainers[0].Image != "good:v1" {
		t.Errorf("init containers %+v, want the good sidecar", got.Spec.InitContainers)
	}
	if !strings.Contains(resp.Result.Message, "good") {
		t.Errorf("message %q does not name the plugin", resp.Result.Message)
	}
}

func TestInjectorLeavesPodsThatAskForNothingAlone(t *testing.T) {
	cases := map[string]map[string]string{
		"LauncherWithoutTheLabel":   launcherLabels(),
		"LabelOnAPodNotALauncher":   {"plugins.example.com/good": ""},
		"LauncherWithAnotherPlugin": launcherLabels("plugins.example.com/other"),
	}
	for name, labels := range cases {
		t.Run(name, func(t *testing.T) {
			req, _ := podRequest(t, labels)
			resp := injector(description("good-sidecar", "good", valid)).Handle(t.Context(), req)
			if !resp.Allowed || len(resp.Patches) != 0 {
				t.Errorf("allowed %v with %d patch operations, want allowed unchanged", resp.Allowed, len(resp.Patches))
			}
		})
	}
}

func TestInjectorRefusesAPodAskingForAnInvalidDescription(t *testing.T) {
	broken := description("broken-sidecar", "broken", "plugin: broken\nlabel: plugins.example.com/broken\n")
	mislabelled := description("liar-sidecar", "someone-else", "plugin: liar\nlabel: plugins.example.com/liar\nimage: x\n")
	in := injector(description("good-sidecar", "good", valid), broken, mislabelled)
	cases := []struct{ label, want string }{
		{"plugins.example.com/broken", "ConfigMap kubevirt/broken-sidecar, key sidecar.yaml: image: required"},
		{"plugins.example.com/liar", `ConfigMap kubevirt/liar-sidecar, key sidecar.yaml: plugin: "liar", but the ConfigMap's label plugin.kubevirt.io/sidecar names "someone-else"`},
	}
	for _, tc := range cases {
		req, _ := podRequest(t, launcherLabels("plugins.example.com/good", tc.label))
		resp := in.Handle(t.Context(), req)
		if resp.Allowed || !strings.Contains(resp.Result.Message, tc.want) {
			t.Errorf("%s: allowed %v, message %q; want a refusal containing %q", tc.label, resp.Allowed, resp.Result.Message, tc.want)
		}
	}
	// Pods that do not ask for the broken ones still get theirs.
	req, _ := podRequest(t, launcherLabels("plugins.example.com/good"))
	if resp := in.Handle(t.Context(), req); !resp.Allowed || len(resp.Patches) == 0 {
		t.Errorf("a Pod asking only for the valid sidecar: allowed %v, %d patch operations", resp.Allowed, len(resp.Patches))
	}
}

func TestInjectorOrdersSidecarsByPluginName(t *testing.T) {
	// Listed by ConfigMap name, zeta's comes first.
	in := injector(description("a", "zeta", "plugin: zeta\nlabel: a.example.com/zeta\nimage: z\n"),
		description("z", "alpha", "plugin: alpha\nlabel: a.example.com/alpha\nimage: a\n"))
	req, _ := podRequest(t, launcherLabels("a.example.com/zeta", "a.example.com/alpha"))
	resp := in.Handle(t.Context(), req)
	patch, _ := json.Marshal(resp.Patches)
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Apply(req.Object.Raw)
	if err != nil {
		t.Fatal(err)
	}
	var got corev1.Pod
	_ = json.Unmarshal(out, &got)
	var names []string
	for _, c := range got.Spec.InitContainers {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "alpha,zeta" {
		t.Errorf("init containers %v, want alpha then zeta", names)
	}
}
