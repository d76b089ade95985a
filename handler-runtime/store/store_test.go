// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

func unstructuredPlugin(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	p := &pluginv1alpha1.Plugin{
		TypeMeta: metav1.TypeMeta{APIVersion: pluginv1alpha1.GroupVersion.String(), Kind: "Plugin"},
		ObjectMeta: metav1.ObjectMeta{Name: name, ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply},
		}},
		Spec: pluginv1alpha1.PluginSpec{NodeHooks: []pluginv1alpha1.NodeHook{{
			Socket: "/var/run/kubevirt/" + name + ".sock", PermittedHooks: []pluginv1alpha1.NodeHookPoint{pluginv1alpha1.PreVMStart},
		}}},
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

// startStore runs a store over a fake dynamic client holding initial.
func startStore(t *testing.T, gate func() bool, initial ...runtime.Object) (*Store, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{Resource(): "PluginList"}, initial...)
	s, err := New(Options{Client: client, FeatureGate: gate})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	if _, err := s.Snapshot(); gate() && !errors.Is(err, ErrNotSynced) {
		t.Fatalf("Snapshot before Run = %v, want ErrNotSynced", err)
	}
	go func() { _ = s.Run(ctx) }()
	if !s.WaitForSync(ctx) || !s.Ready() {
		t.Fatal("store did not sync")
	}
	return s, client
}

func names(snap Snapshot) []string {
	var out []string
	for _, p := range snap.Plugins {
		out = append(out, p.Name)
	}
	return out
}

func TestSnapshotIsSortedByNameWithoutManagedFields(t *testing.T) {
	s, _ := startStore(t, func() bool { return true },
		unstructuredPlugin(t, "charlie"), unstructuredPlugin(t, "alpha"), unstructuredPlugin(t, "bravo"))
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if got := names(snap); len(got) != 3 || got[0] != "alpha" || got[1] != "bravo" || got[2] != "charlie" {
		t.Fatalf("snapshot = %v, want alpha, bravo, charlie", got)
	}
	for _, p := range snap.Plugins {
		if len(p.ManagedFields) != 0 {
			t.Fatalf("plugin %s kept its managedFields", p.Name)
		}
		if len(p.Spec.NodeHooks) != 1 {
			t.Fatalf("plugin %s lost its spec in conversion: %+v", p.Name, p.Spec)
		}
	}
}

func TestChangesInTheAPIReachTheNextSnapshot(t *testing.T) {
	s, client := startStore(t, func() bool { return true }, unstructuredPlugin(t, "bravo"))
	before, _ := s.Snapshot()
	plugins := client.Resource(Resource())
	if _, err := plugins.Create(t.Context(), unstructuredPlugin(t, "alpha"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		snap, _ := s.Snapshot()
		return len(snap.Plugins) == 2 && snap.Plugins[0].Name == "alpha", nil
	}); err != nil {
		t.Fatalf("alpha did not appear: %v", err)
	}
	if err := plugins.Delete(t.Context(), "bravo", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		snap, _ := s.Snapshot()
		return len(snap.Plugins) == 1 && snap.Plugins[0].Name == "alpha", nil
	}); err != nil {
		t.Fatalf("bravo did not go: %v", err)
	}
	after, _ := s.Snapshot()
	if after.Revision == before.Revision {
		t.Fatal("revision did not change with the Plugins")
	}
}

func TestFeatureGateOffEmptiesTheSnapshot(t *testing.T) {
	var gate atomic.Bool
	gate.Store(true)
	s, _ := startStore(t, gate.Load, unstructuredPlugin(t, "alpha"))

	gate.Store(false)
	snap, err := s.Snapshot()
	if err != nil || snap.Enabled || len(snap.Plugins) != 0 {
		t.Fatalf("gate off: Snapshot = %+v, %v; want empty and disabled", snap, err)
	}
	gate.Store(true)
	snap, err = s.Snapshot()
	if err != nil || !snap.Enabled || len(snap.Plugins) != 1 {
		t.Fatalf("gate back on: Snapshot = %+v, %v; want alpha", snap, err)
	}
}

func TestStoreNeedsAClient(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Fatal("New without Config or Client succeeded")
	}
}
