// SPDX-License-Identifier: Apache-2.0

package controller

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt-plugins/framework/tests/framework/repo"
)

// TestTheEmulatedVersionDecidesWhetherMutatingAdmissionPolicyIsServed keeps
// the version matrix of `make test` from collapsing into one version: an
// API server emulating a minor before 1.36 must not serve
// admissionregistration.k8s.io/v1 MutatingAdmissionPolicy, and one at 1.36
// or later (or at the binary's own version, the newest) must. Were the
// emulated version silently dropped, the "1.33" run would be a second run
// at the newest version.
func TestTheEmulatedVersionDecidesWhetherMutatingAdmissionPolicyIsServed(t *testing.T) {
	want := true
	if v := server.EmulatedVersion; v != "" {
		var major, minor int
		if _, err := fmt.Sscanf(v, "%d.%d", &major, &minor); err != nil {
			t.Fatalf("emulated version %q: %v", v, err)
		}
		want = major > 1 || minor >= 36
	}
	if got := servesKind(t, "MutatingAdmissionPolicy"); got != want {
		t.Fatalf("the API server (emulated version %q) serves admissionregistration.k8s.io/v1 MutatingAdmissionPolicy: %v, want %v", server.EmulatedVersion, got, want)
	}
}

// The README tells admins of clusters older than 1.36 to use the webhook
// for injection: there a sample's policy cannot be installed at all.
func TestSampleInjectionPolicyIsRefusedWhereMutatingAdmissionPolicyIsNotServed(t *testing.T) {
	if servesKind(t, "MutatingAdmissionPolicy") {
		t.Skipf("the API server (emulated version %q) serves MutatingAdmissionPolicy; the injection tests cover it", server.EmulatedVersion)
	}
	path, err := repo.Path("sample-sidecars", "policies", "template", "injection-policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	policy, _, _ := strings.Cut(string(data), "\n---\n")
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(policy), &u.Object); err != nil {
		t.Fatal(err)
	}
	if err := admin.Create(t.Context(), u); !meta.IsNoMatchError(err) {
		t.Fatalf("creating the sample MutatingAdmissionPolicy: %v, want the API server's no-match error", err)
	}
}
