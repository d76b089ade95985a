package controller

import (
	"context"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt-plugins/framework/tests/framework/repo"
)

// The README tells admins of clusters older than 1.36 to use a webhook for
// injection: there the sample policy cannot be installed at all.
func TestSampleInjectionPolicyIsRefusedWhereMutatingAdmissionPolicyIsNotServed(t *testing.T) {
	if servesKind(t, "MutatingAdmissionPolicy") {
		t.Skipf("the API server (emulated version %q) serves MutatingAdmissionPolicy; the injection tests cover it", server.EmulatedVersion)
	}
	path, err := repo.Path("deploy", "policies", "sample-sidecar-injection", "mutatingadmissionpolicy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &u.Object); err != nil {
		t.Fatal(err)
	}
	if err := admin.Create(context.Background(), u); !meta.IsNoMatchError(err) {
		t.Fatalf("creating the sample MutatingAdmissionPolicy: %v, want the API server's no-match error", err)
	}
}
