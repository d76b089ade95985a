// SPDX-License-Identifier: Apache-2.0

package launcherplugins

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/handler-runtime/store"
)

type source struct {
	snap  store.Snapshot
	err   error
	calls int
}

func (s *source) Snapshot() (store.Snapshot, error) {
	s.calls++
	return s.snap, s.err
}

func withLauncherHook(name string) *pluginv1alpha1.Plugin {
	return &pluginv1alpha1.Plugin{
		ObjectMeta: metav1.ObjectMeta{Name: name, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec: pluginv1alpha1.PluginSpec{LauncherHooks: []pluginv1alpha1.LauncherHook{{
			CEL: &pluginv1alpha1.CELHook{HookPoint: pluginv1alpha1.GuestDefinition, Expression: `Domain{}`},
		}}},
	}
}

func nodeOnly(name string) *pluginv1alpha1.Plugin {
	return &pluginv1alpha1.Plugin{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: pluginv1alpha1.PluginSpec{NodeHooks: []pluginv1alpha1.NodeHook{{
			Socket: "/var/run/kubevirt/x.sock", PermittedHooks: []pluginv1alpha1.NodeHookPoint{pluginv1alpha1.PreVMStart},
		}}},
	}
}

var vmi = &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "default"}}

func TestLaunchersReceiveOnlyPluginsWithLauncherHooksSortedWithoutManagedFields(t *testing.T) {
	src := &source{snap: store.Snapshot{Enabled: true, Revision: 1, Plugins: []*pluginv1alpha1.Plugin{
		withLauncherHook("zulu"), nodeOnly("mike"), withLauncherHook("alpha"),
	}}}
	_, got, plugins := handOver(t, src)
	if len(plugins) != 2 || plugins[0].Name != "alpha" || plugins[1].Name != "zulu" {
		t.Fatalf("decoded %d plugins, want alpha then zulu: %s", len(plugins), got.Data)
	}
	if strings.Contains(string(got.Data), "managedFields") {
		t.Fatalf("managedFields in %s", got.Data)
	}
	if plugins[0].Kind != "Plugin" || plugins[0].APIVersion != pluginv1alpha1.GroupVersion.String() {
		t.Fatalf("items carry TypeMeta %+v", plugins[0].TypeMeta)
	}
	if len(src.snap.Plugins[0].ManagedFields) == 0 {
		t.Fatal("encoding modified the shared snapshot")
	}
}

func TestGenerationChangesExactlyWhenTheDataDoes(t *testing.T) {
	zulu := withLauncherHook("zulu")
	src := &source{snap: store.Snapshot{Enabled: true, Revision: 1, Plugins: []*pluginv1alpha1.Plugin{zulu}}}
	s, err := New(Options{Plugins: src})
	if err != nil {
		t.Fatal(err)
	}
	first, _ := s.LauncherPlugins(vmi)

	// A new revision whose launcher-relevant content is the same (a node
	// only plugin appeared): same data, same generation.
	src.snap = store.Snapshot{Enabled: true, Revision: 2, Plugins: []*pluginv1alpha1.Plugin{nodeOnly("mike"), zulu}}
	same, _ := s.LauncherPlugins(vmi)
	if same.Generation != first.Generation {
		t.Fatal("generation changed although the data did not")
	}

	edited := zulu.DeepCopy()
	edited.Spec.LauncherHooks[0].CEL.Expression = `Domain{Name: "x"}`
	src.snap = store.Snapshot{Enabled: true, Revision: 3, Plugins: []*pluginv1alpha1.Plugin{edited}}
	changed, _ := s.LauncherPlugins(vmi)
	if changed.Generation == first.Generation {
		t.Fatal("generation did not change with the data")
	}

	src.snap = store.Snapshot{Enabled: false, Revision: 3}
	off, _ := s.LauncherPlugins(vmi)
	if decoded, err := Decode(off.Data); err != nil || len(decoded) != 0 || off.Generation == changed.Generation {
		t.Fatalf("gate off: %d plugins (%v), want none with a generation of its own", len(decoded), err)
	}
}

func TestResultIsEncodedOncePerRevision(t *testing.T) {
	src := &source{snap: store.Snapshot{Enabled: true, Revision: 7, Plugins: []*pluginv1alpha1.Plugin{withLauncherHook("a")}}}
	s, err := New(Options{Plugins: src})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := s.LauncherPlugins(vmi)
	b, _ := s.LauncherPlugins(vmi)
	if &a.Data[0] != &b.Data[0] {
		t.Fatal("the same revision was encoded twice")
	}
}

func TestUnsyncedStoreIsAnError(t *testing.T) {
	s, err := New(Options{Plugins: &source{err: store.ErrNotSynced}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.LauncherPlugins(vmi); !errors.Is(err, store.ErrNotSynced) {
		t.Fatalf("LauncherPlugins = %v, want ErrNotSynced", err)
	}
	if _, err := s.LauncherPlugins(nil); err == nil {
		t.Fatal("LauncherPlugins(nil) succeeded")
	}
}

func TestLaunchersAreHandedNameGenerationAndSpecOnlySoStatusAndMetadataWritesChangeNothing(t *testing.T) {
	base := withLauncherHook("p")
	base.Generation = 3
	base.ResourceVersion = "100"
	base.UID = "uid-p"
	base.Annotations = map[string]string{"note": "a"}
	base.Labels = map[string]string{"team": "a"}
	base.Status = pluginv1alpha1.PluginStatus{ObservedGeneration: 3, LauncherHooks: 1, Conditions: []metav1.Condition{{
		Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Unix(1, 0),
	}}}
	first, err := Encode([]*pluginv1alpha1.Plugin{base})
	if err != nil {
		t.Fatal(err)
	}
	plugins, err := Decode(first.Data)
	if err != nil {
		t.Fatal(err)
	}
	want := pluginv1alpha1.Plugin{
		TypeMeta:   metav1.TypeMeta{APIVersion: pluginv1alpha1.GroupVersion.String(), Kind: "Plugin"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 3},
		Spec:       base.Spec,
	}
	if len(plugins) != 1 || !equality.Semantic.DeepEqual(plugins[0], want) {
		t.Fatalf("launcher is handed %s, want only name, generation and spec", first.Data)
	}

	for name, edit := range map[string]func(p *pluginv1alpha1.Plugin){
		"status write":      func(p *pluginv1alpha1.Plugin) { p.Status.Conditions[0].Status = metav1.ConditionFalse },
		"resourceVersion":   func(p *pluginv1alpha1.Plugin) { p.ResourceVersion = "101" },
		"annotation change": func(p *pluginv1alpha1.Plugin) { p.Annotations["note"] = "b" },
		"label change":      func(p *pluginv1alpha1.Plugin) { p.Labels["team"] = "b" },
	} {
		edited := base.DeepCopy()
		edit(edited)
		got, err := Encode([]*pluginv1alpha1.Plugin{edited})
		if err != nil {
			t.Fatal(err)
		}
		if got.Generation != first.Generation {
			t.Errorf("%s changed the generation: %s", name, got.Data)
		}
	}

	specEdit := base.DeepCopy()
	specEdit.Spec.LauncherHooks[0].CEL.Expression = `Domain{Name: "x"}`
	specEdit.Generation = 4
	got, err := Encode([]*pluginv1alpha1.Plugin{specEdit})
	if err != nil {
		t.Fatal(err)
	}
	if got.Generation == first.Generation {
		t.Fatal("a spec change left the generation unchanged")
	}
}
