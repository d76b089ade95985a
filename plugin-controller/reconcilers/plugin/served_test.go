// SPDX-License-Identifier: Apache-2.0

package plugin

import (
	"context"
	"errors"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// discoveryStub answers ServerResourcesForGroupVersion from a table the
// test changes, the way an API server's answer changes across an upgrade.
type discoveryStub struct {
	kinds []string // served in admissionregistration.k8s.io/v1; nil: group version not served
	err   error
}

func (d *discoveryStub) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	if d.err != nil {
		return nil, d.err
	}
	if d.kinds == nil || gv != "admissionregistration.k8s.io/v1" {
		return nil, apierrors.NewNotFound(schema.GroupResource{}, gv)
	}
	list := &metav1.APIResourceList{GroupVersion: gv}
	for _, k := range d.kinds {
		list.APIResources = append(list.APIResources, metav1.APIResource{Kind: k, Name: k, Verbs: metav1.Verbs{"get", "list", "watch"}})
	}
	// Status subresources share the kind but are not watchable.
	list.APIResources = append(list.APIResources, metav1.APIResource{Kind: "MutatingAdmissionPolicy", Name: "mutatingadmissionpolicies/status", Verbs: metav1.Verbs{"get", "patch"}})
	return list, nil
}

// Kubernetes 1.33 serves every admission kind but MutatingAdmissionPolicy in v1.
var kinds133 = []string{"ValidatingAdmissionPolicy", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "ValidatingAdmissionPolicyBinding"}

func TestDiscoveryFindsTheAdmissionKindsTheServerServes(t *testing.T) {
	got, err := discoverServedKinds(&discoveryStub{kinds: kinds133})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"ValidatingAdmissionPolicy": true, "MutatingWebhookConfiguration": true, "ValidatingWebhookConfiguration": true}
	if len(got) != len(want) || !got["ValidatingAdmissionPolicy"] || !got["MutatingWebhookConfiguration"] || !got["ValidatingWebhookConfiguration"] {
		t.Fatalf("served %v, want %v (status subresources and other kinds are not reference kinds)", got, want)
	}
	if got, err := discoverServedKinds(&discoveryStub{}); err != nil || len(got) != 0 {
		t.Fatalf("group version not served: %v, %v; want an empty set and no error", got, err)
	}
	if _, err := discoverServedKinds(&discoveryStub{err: errors.New("connection refused")}); err == nil {
		t.Fatal("a discovery failure was taken for an answer")
	}
}

func TestRediscoveryReportsKindsTheServerStartsAndStopsServing(t *testing.T) {
	stub := &discoveryStub{kinds: kinds133}
	served := &servedKinds{}
	initial, err := discoverServedKinds(stub)
	if err != nil {
		t.Fatal(err)
	}
	served.set(initial)
	type change struct{ added, removed []string }
	var changes []change
	r := &rediscovery{discovery: stub, kinds: served, onChange: func(_ context.Context, added, removed []string) {
		changes = append(changes, change{added, removed})
	}}

	r.once(t.Context())
	if len(changes) != 0 {
		t.Fatalf("changes %v with nothing changed", changes)
	}
	// The cluster is upgraded to a version serving MutatingAdmissionPolicy.
	stub.kinds = append(slices.Clone(kinds133), "MutatingAdmissionPolicy")
	r.once(t.Context())
	if len(changes) != 1 || !slices.Equal(changes[0].added, []string{"MutatingAdmissionPolicy"}) || len(changes[0].removed) != 0 {
		t.Fatalf("changes %v, want MutatingAdmissionPolicy added", changes)
	}
	if !served.has("MutatingAdmissionPolicy") {
		t.Fatal("the newly served kind is not in the set the reconciler reads")
	}
	// A failing discovery keeps what was known.
	stub.err = errors.New("connection refused")
	r.once(t.Context())
	if len(changes) != 1 || !served.has("MutatingAdmissionPolicy") {
		t.Fatalf("a failed discovery changed the set: changes %v", changes)
	}
	// Served no longer (a feature gate turned off).
	stub.err, stub.kinds = nil, kinds133
	r.once(t.Context())
	if len(changes) != 2 || len(changes[1].added) != 0 || !slices.Equal(changes[1].removed, []string{"MutatingAdmissionPolicy"}) || served.has("MutatingAdmissionPolicy") {
		t.Fatalf("changes %v, want MutatingAdmissionPolicy removed", changes)
	}
}
