// SPDX-License-Identifier: Apache-2.0

package labelsync

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"

	"github.com/kubevirt-plugins/framework/label-syncer/syncer"
	"github.com/kubevirt-plugins/framework/label-syncer/syncevents"
	"github.com/kubevirt-plugins/framework/tests/framework/poll"
	"github.com/kubevirt-plugins/framework/tests/framework/repo"
)

const (
	deployNamespace = "kubevirt"
	serviceAccount  = "system:serviceaccount:kubevirt:label-syncer"
)

// applyDeployRBAC creates the ServiceAccount, roles and bindings shipped in
// deploy/label-syncer, as `kubectl apply -k` would.
func applyDeployRBAC(t *testing.T) {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: deployNamespace}}
	if err := server.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, f := range []string{"serviceaccount.yaml", "rbac/role.yaml", "bindings.yaml"} {
		data, err := os.ReadFile(filepath.Join(root, "deploy/label-syncer", f))
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := dec.Decode(&obj.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				t.Fatalf("%s: %v", f, err)
			}
			if len(obj.Object) == 0 {
				continue
			}
			if err := server.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("%s: creating %s %s: %v", f, obj.GetKind(), obj.GetName(), err)
			}
		}
	}
}

// TestDeployRBACIsEnoughToSyncWithLeaderElection runs the syncer as the
// ServiceAccount of deploy/label-syncer, bound to the generated roles,
// with leader election on: every request it makes must be allowed.
func TestDeployRBACIsEnoughToSyncWithLeaderElection(t *testing.T) {
	applyDeployRBAC(t)
	ns := newNamespace(t)
	r := startVM(t, ns, "vm-rbac", map[string]string{"ops.example.com/owner": "team-a"}, map[string]string{"notes.example.com/n": "1"}, outside)

	cfg := rest.CopyConfig(server.Config)
	cfg.QPS = -1
	cfg.Impersonate = rest.ImpersonationConfig{UserName: serviceAccount}
	// Watch all namespaces, as the Deployment does: the ClusterRole must
	// allow cluster-wide lists and watches.
	startSyncer(t, cfg, syncer.Options{
		Labels:                  mustFilter(t, "ops.example.com/*"),
		Annotations:             mustFilter(t, "notes.example.com/*"),
		LeaderElection:          true,
		LeaderElectionNamespace: deployNamespace,
		Namespaces:              []string{},
	})
	// A label value no VMI can take, refused with a Warning event. The key
	// is this run's own (it names the namespace): the syncer watches every
	// namespace, where the other tests' VMs, and this test's VM of an
	// earlier run (go test -count; namespaces are never removed without a
	// namespace controller), refuse keys too, and one problem gets one
	// event, on the first object met.
	badKey := "ops.example.com/rbac-bad-" + ns
	patchTemplate(t, r.vm, map[string]any{"ops.example.com/owner": "team-rbac", badKey: badValue}, map[string]any{"notes.example.com/n": "2"})
	poll.Until(t, "synced as the ServiceAccount", waitTimeout, func() error {
		if err := bothHave(t, r, map[string]string{"ops.example.com/owner": "team-rbac"}); err != nil {
			return err
		}
		return bothHaveAnnotations(t, r, map[string]string{"notes.example.com/n": "2"})
	})
	poll.Until(t, "events recorded as the ServiceAccount", waitTimeout, func() error {
		return hasEvents(t.Context(), ns, "vm-rbac", syncevents.ReasonKeyRefused+": label "+badKey+" not synced to VirtualMachineInstance vm-rbac")
	})
}

func TestDeployRBACGrantsNothingMore(t *testing.T) {
	applyDeployRBAC(t)
	cases := []struct {
		name string
		attr authorizationv1.ResourceAttributes
	}{
		{"write VMs", authorizationv1.ResourceAttributes{Group: "kubevirt.io", Resource: "virtualmachines", Verb: "patch"}},
		{"update VMIs", authorizationv1.ResourceAttributes{Group: "kubevirt.io", Resource: "virtualmachineinstances", Verb: "update"}},
		{"delete Pods", authorizationv1.ResourceAttributes{Resource: "pods", Verb: "delete"}},
		{"create Pods", authorizationv1.ResourceAttributes{Resource: "pods", Verb: "create"}},
		{"read Secrets", authorizationv1.ResourceAttributes{Resource: "secrets", Verb: "list"}},
		{"Leases outside its namespace", authorizationv1.ResourceAttributes{Group: "coordination.k8s.io", Resource: "leases", Verb: "update", Namespace: "default"}},
		{"delete its Lease", authorizationv1.ResourceAttributes{Group: "coordination.k8s.io", Resource: "leases", Verb: "delete", Namespace: deployNamespace}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:               serviceAccount,
				Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + deployNamespace},
				ResourceAttributes: &tc.attr,
			}}
			if err := server.Client.Create(t.Context(), sar); err != nil {
				t.Fatal(err)
			}
			if sar.Status.Allowed {
				t.Fatalf("the ServiceAccount may %s: %+v", tc.name, tc.attr)
			}
		})
	}
}
