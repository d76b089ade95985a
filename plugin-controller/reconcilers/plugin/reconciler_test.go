// SPDX-License-Identifier: Apache-2.0

package plugin

import (
	"context"
	"slices"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubevirt-plugins/framework/api/celenv"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

type fixture struct {
	client       client.Client
	recorder     *events.FakeRecorder
	r            *Reconciler
	statusWrites int
}

func newFixture(t *testing.T, objs ...client.Object) *fixture {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{pluginv1alpha1.AddToScheme, admissionregistrationv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	env, err := celenv.New(celenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{recorder: events.NewFakeRecorder(100)}
	f.client = fake.NewClientBuilder().WithScheme(scheme).
		WithStatusSubresource(&pluginv1alpha1.Plugin{}).
		WithObjects(objs...).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				f.statusWrites++
				return c.SubResource(sub).Update(ctx, obj, opts...)
			},
		}).Build()
	f.r = &Reconciler{
		Client: f.client, CEL: env, Recorder: f.recorder,
		Clock: clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
	}
	return f
}

func (f *fixture) reconcile(t *testing.T, name string) *pluginv1alpha1.Plugin {
	t.Helper()
	if _, err := f.r.Reconcile(t.Context(), reconcile.Request{NamespacedName: client.ObjectKey{Name: name}}); err != nil {
		t.Fatalf("Reconcile %s: %v", name, err)
	}
	var p pluginv1alpha1.Plugin
	if err := f.client.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestReconcileWritesStatusOnlyWhenItChanges(t *testing.T) {
	p := &pluginv1alpha1.Plugin{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 1},
		Spec:       pluginv1alpha1.PluginSpec{Condition: "true"},
	}
	f := newFixture(t, p)
	got := f.reconcile(t, "p")
	if f.statusWrites != 1 || !meta.IsStatusConditionTrue(got.Status.Conditions, pluginv1alpha1.ConditionReady) {
		t.Fatalf("first reconcile: %d writes, conditions %+v; want 1 write and Ready", f.statusWrites, got.Status.Conditions)
	}
	f.reconcile(t, "p")
	f.reconcile(t, "p")
	if f.statusWrites != 1 {
		t.Fatalf("%d status writes after reconciling an unchanged Plugin again, want 1", f.statusWrites)
	}
	if ev := f.events(); !slices.Equal(ev, []string{"Normal Ready Ready is True: the plugin is accepted and its admission references resolve"}) {
		t.Fatalf("events %q, want a single Ready event", ev)
	}
}

func TestReconcileReportsMissingReferencesAndTheirArrival(t *testing.T) {
	p := &pluginv1alpha1.Plugin{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 1},
		Spec: pluginv1alpha1.PluginSpec{
			MutatingAdmissionPolicies: []pluginv1alpha1.AdmissionReference{{Name: "map-a"}},
			MutatingAdmissionWebhooks: []pluginv1alpha1.AdmissionReference{{Name: "mwc-present"}},
		},
	}
	present := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "mwc-present"}}
	f := newFixture(t, p, present)
	got := f.reconcile(t, "p")
	c := meta.FindStatusCondition(got.Status.Conditions, pluginv1alpha1.ConditionAdmissionReferencesResolved)
	if c == nil || c.Status != metav1.ConditionFalse || c.Message != "referenced admission objects not found: MutatingAdmissionPolicy map-a" {
		t.Fatalf("condition %+v, want False naming MutatingAdmissionPolicy map-a alone", c)
	}
	if ev := f.events(); len(ev) != 2 {
		t.Fatalf("events %q, want Warnings for AdmissionReferencesResolved and Ready", ev)
	}

	if err := f.client.Create(t.Context(), &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "map-a"}}); err != nil {
		t.Fatal(err)
	}
	got = f.reconcile(t, "p")
	if !meta.IsStatusConditionTrue(got.Status.Conditions, pluginv1alpha1.ConditionReady) {
		t.Fatalf("conditions %+v after the policy appeared, want Ready", got.Status.Conditions)
	}
	want := []string{
		"Normal ReferencesFound AdmissionReferencesResolved is True: every referenced admission object exists",
		"Normal Ready Ready is True: the plugin is accepted and its admission references resolve",
	}
	if ev := f.events(); !slices.Equal(ev, want) {
		t.Fatalf("events %q, want %q", ev, want)
	}
}

func TestReconcileReportsAReferenceToAKindTheServerDoesNotServe(t *testing.T) {
	p := &pluginv1alpha1.Plugin{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 1},
		Spec: pluginv1alpha1.PluginSpec{
			MutatingAdmissionPolicies: []pluginv1alpha1.AdmissionReference{{Name: "map-a"}},
			MutatingAdmissionWebhooks: []pluginv1alpha1.AdmissionReference{{Name: "mwc-present"}},
		},
	}
	present := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "mwc-present"}}
	f := newFixture(t, p, present)
	f.r.served = &servedKinds{}
	f.r.served.set(map[string]bool{"MutatingWebhookConfiguration": true, "ValidatingWebhookConfiguration": true, "ValidatingAdmissionPolicy": true})
	got := f.reconcile(t, "p")
	c := meta.FindStatusCondition(got.Status.Conditions, pluginv1alpha1.ConditionAdmissionReferencesResolved)
	want := "the API server does not serve admissionregistration.k8s.io/v1 MutatingAdmissionPolicy (referenced: map-a)"
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonKindNotServed || c.Message != want {
		t.Fatalf("condition %+v, want False, %s, %q", c, ReasonKindNotServed, want)
	}

	// Once served, the same Plugin is judged on the objects themselves.
	f.r.served.set(map[string]bool{"MutatingAdmissionPolicy": true, "MutatingWebhookConfiguration": true})
	got = f.reconcile(t, "p")
	c = meta.FindStatusCondition(got.Status.Conditions, pluginv1alpha1.ConditionAdmissionReferencesResolved)
	if c.Reason != ReasonReferencesMissing || c.Message != "referenced admission objects not found: MutatingAdmissionPolicy map-a" {
		t.Fatalf("condition %+v after the kind is served, want %s naming map-a", c, ReasonReferencesMissing)
	}
}

func TestReconcileOfADeletedPluginIsANoOp(t *testing.T) {
	f := newFixture(t)
	if _, err := f.r.Reconcile(t.Context(), reconcile.Request{NamespacedName: client.ObjectKey{Name: "gone"}}); err != nil {
		t.Fatalf("Reconcile of a missing Plugin: %v", err)
	}
	if f.statusWrites != 0 {
		t.Fatalf("%d status writes for a missing Plugin", f.statusWrites)
	}
}
