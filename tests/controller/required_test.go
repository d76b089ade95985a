// SPDX-License-Identifier: Apache-2.0

package controller

import (
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/api/plugin/v1alpha1/required"
)

// warnings collects the warnings the API server sends back.
type warnings struct {
	mu   sync.Mutex
	seen []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.seen...)
}

var pluginsResource = schema.GroupVersionResource{Group: "plugin.kubevirt.io", Version: "v1alpha1", Resource: "plugins"}

// deleteWithWarnings deletes the Plugin through a client that keeps the
// API server's warnings, as kubectl prints them.
func deleteWithWarnings(t *testing.T, name string) []string {
	t.Helper()
	w := &warnings{}
	cfg := rest.CopyConfig(server.Config)
	cfg.WarningHandler = w
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := dc.Resource(pluginsResource).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting Plugin %s: %v", name, err)
	}
	return w.all()
}

func requiringObject(t *testing.T, kind, name, requires string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("kubevirt.io/v1")
	u.SetKind(kind)
	u.SetNamespace("default")
	u.SetName(name)
	switch kind {
	case "VirtualMachineInstance":
		u.SetAnnotations(map[string]string{required.Annotation: requires})
		u.Object["spec"] = map[string]any{"domain": map[string]any{"devices": map[string]any{}}}
	case "VirtualMachine":
		u.Object["spec"] = map[string]any{"template": map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{required.Annotation: requires}},
			"spec":     map[string]any{"domain": map[string]any{"devices": map[string]any{}}},
		}}
	}
	if err := admin.Create(t.Context(), u); err != nil {
		t.Fatalf("creating %s %s: %v", kind, name, err)
	}
	deleteAfter(t, u)
}

// TestDeletingAPluginThatVMsRequireWarnsNamingThem: the plugin-controller's
// webhook lets the deletion through and warns, naming the VMIs and the
// VirtualMachine templates that require the Plugin (annotation
// plugin.kubevirt.io/required); deleting a Plugin nothing requires gives
// no warning.
func TestDeletingAPluginThatVMsRequireWarnsNamingThem(t *testing.T) {
	requiringObject(t, "VirtualMachineInstance", "needs-enc", "audit, disk-enc")
	requiringObject(t, "VirtualMachineInstance", "needs-audit-only", "audit")
	requiringObject(t, "VirtualMachine", "template-needs-enc", "disk-enc")
	for _, name := range []string{"disk-enc", "unrequired"} {
		p := newPlugin(name, pluginv1alpha1.PluginSpec{LauncherHooks: []pluginv1alpha1.LauncherHook{celHook(`Domain{}`)}})
		if err := admin.Create(t.Context(), p); err != nil {
			t.Fatal(err)
		}
		deleteAfter(t, p)
	}

	got := deleteWithWarnings(t, "disk-enc")
	if len(got) != 2 {
		t.Fatalf("warnings %q, want one for the VMIs and one for the VirtualMachines", got)
	}
	for i, want := range [][]string{
		{`Plugin "disk-enc" is required (annotation plugin.kubevirt.io/required) by 1 VMI(s): default/needs-enc;`, "PreVMStart fails"},
		{`Plugin "disk-enc" is required (annotation plugin.kubevirt.io/required in spec.template) by 1 VirtualMachine(s): default/template-needs-enc;`},
	} {
		for _, w := range want {
			if !strings.Contains(got[i], w) {
				t.Errorf("warning %q does not say %q", got[i], w)
			}
		}
	}
	if err := admin.Get(t.Context(), client.ObjectKey{Name: "disk-enc"}, &pluginv1alpha1.Plugin{}); !apierrors.IsNotFound(err) {
		t.Errorf("Plugin disk-enc after the deletion: %v, want it gone (the webhook only warns)", err)
	}
	if got := deleteWithWarnings(t, "unrequired"); len(got) != 0 {
		t.Errorf("deleting a Plugin nothing requires warned: %q", got)
	}
}
