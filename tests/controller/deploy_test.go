package controller

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/kubevirt-plugins/framework/tests/framework/repo"
)

// kustomize builds a kustomization of the repository into objects.
func kustomize(t *testing.T, rel ...string) []*unstructured.Unstructured {
	t.Helper()
	dir, err := repo.Path(rel...)
	if err != nil {
		t.Fatal(err)
	}
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", strings.Join(rel, "/"), err)
	}
	var out []*unstructured.Unstructured
	for _, r := range rm.Resources() {
		b, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(b); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

func kinds(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+"/"+o.GetName())
	}
	slices.Sort(out)
	return out
}

func TestDeployKustomizationIsAcceptedByTheAPIServer(t *testing.T) {
	ctx := context.Background()
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controllerNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	objs := kustomize(t, "deploy")
	want := []string{
		"ClusterRole/plugin-controller", "ClusterRole/plugin-controller-metrics-reader", "ClusterRoleBinding/plugin-controller",
		"CustomResourceDefinition/plugins.plugin.kubevirt.io", "Deployment/plugin-controller",
		"Role/plugin-controller", "RoleBinding/plugin-controller", "Service/plugin-controller-metrics", "Service/plugin-controller-webhook",
		"ServiceAccount/plugin-controller", "ValidatingAdmissionPolicy/kubevirt-plugin-sockets-subpath",
		"ValidatingAdmissionPolicyBinding/kubevirt-plugin-sockets-subpath",
		"ValidatingWebhookConfiguration/plugin-controller",
	}
	if got := kinds(objs); !slices.Equal(got, want) {
		t.Fatalf("deploy/ builds\n%v\nwant\n%v", got, want)
	}
	dryRunApply(t, objs)
}

// dryRunApply server-side applies objs in dry-run mode: the API server
// validates each object (new or already installed by other tests) without
// keeping it. The ValidatingWebhookConfiguration goes under another name:
// envtest installed one of the same name pointing at a URL, and a service
// applied over it would make both set.
func dryRunApply(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		if strings.HasPrefix(o.GetAPIVersion(), "cert-manager.io/") {
			continue // no cert-manager CRDs here
		}
		o = o.DeepCopy()
		if o.GetKind() == "ValidatingWebhookConfiguration" {
			o.SetName(o.GetName() + "-dry-run")
		}
		err := admin.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(o),
			client.DryRunAll, client.FieldOwner("deploy-test"), client.ForceOwnership)
		if err != nil {
			t.Errorf("%s %s refused: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

func TestCertManagerOverlaySwitchesTheControllerToExternalCertificates(t *testing.T) {
	objs := kustomize(t, "deploy", "cert-manager")
	var deployment, vwc *unstructured.Unstructured
	for _, o := range objs {
		switch o.GetKind() {
		case "Deployment":
			deployment = o
		case "ValidatingWebhookConfiguration":
			vwc = o
		}
	}
	if vwc == nil || vwc.GetAnnotations()["cert-manager.io/inject-ca-from"] != "kubevirt/plugin-controller-webhook" {
		t.Fatalf("ValidatingWebhookConfiguration lacks the CA injection annotation: %v", vwc)
	}
	checkCAChain(t, objs, "plugin-controller-webhook")
	containers, _, _ := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	if !slices.Contains(args, "--webhook-cert-management=external") {
		t.Errorf("controller args %v, want external certificate management", args)
	}
	volumes, _, _ := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "volumes")
	if len(volumes) != 1 {
		t.Fatalf("volumes %v, want the certs volume alone", volumes)
	}
	certs := volumes[0].(map[string]any)
	secret, _, _ := unstructured.NestedString(certs, "secret", "secretName")
	if replicas, _, _ := unstructured.NestedInt64(deployment.Object, "spec", "replicas"); replicas < 2 {
		t.Errorf("overlay runs %d replicas, want at least 2 sharing the Secret", replicas)
	}
	if _, hasEmptyDir := certs["emptyDir"]; hasEmptyDir || secret != "plugin-controller-webhook-cert" {
		t.Errorf("certs volume %v, want the Certificate's Secret and no emptyDir", certs)
	}
	// Everything but the cert-manager kinds is accepted as well.
	dryRunApply(t, objs)
}

// checkCAChain follows the overlay from the serving Certificate to its
// Issuer, which must be a CA Issuer whose Secret a CA Certificate fills,
// issued by a self-signed Issuer, with a key kept across renewals: the
// caBundle (the CA) then survives every renewal of the serving
// certificate. A serving certificate issued by the self-signed Issuer
// itself would put a new root in the bundle at each renewal.
func checkCAChain(t *testing.T, objs []*unstructured.Unstructured, servingCert string) {
	t.Helper()
	byName := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		byName[o.GetKind()+"/"+o.GetName()] = o
	}
	str := func(o *unstructured.Unstructured, path ...string) string {
		v, _, _ := unstructured.NestedString(o.Object, path...)
		return v
	}
	serving := byName["Certificate/"+servingCert]
	if serving == nil {
		t.Fatalf("no Certificate %s in %v", servingCert, kinds(objs))
	}
	caIssuer := byName[str(serving, "spec", "issuerRef", "kind")+"/"+str(serving, "spec", "issuerRef", "name")]
	if caIssuer == nil || str(caIssuer, "spec", "ca", "secretName") == "" {
		t.Fatalf("the serving Certificate is issued by %v, want a CA Issuer", caIssuer)
	}
	var caCert *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Certificate" && str(o, "spec", "secretName") == str(caIssuer, "spec", "ca", "secretName") {
			caCert = o
		}
	}
	if caCert == nil {
		t.Fatalf("no Certificate fills the CA Issuer's Secret %s", str(caIssuer, "spec", "ca", "secretName"))
	}
	if isCA, _, _ := unstructured.NestedBool(caCert.Object, "spec", "isCA"); !isCA {
		t.Errorf("Certificate %s fills the CA Issuer's Secret but is not a CA", caCert.GetName())
	}
	if p := str(caCert, "spec", "privateKey", "rotationPolicy"); p != "Never" {
		t.Errorf("CA Certificate %s rotationPolicy %q, want Never: a new key at renewal would untrust every serving certificate", caCert.GetName(), p)
	}
	root := byName[str(caCert, "spec", "issuerRef", "kind")+"/"+str(caCert, "spec", "issuerRef", "name")]
	if root == nil {
		t.Fatalf("the CA Certificate's Issuer is not in the overlay")
	}
	if _, selfSigned, _ := unstructured.NestedMap(root.Object, "spec", "selfSigned"); !selfSigned {
		t.Errorf("the CA Certificate is issued by %s, want a self-signed Issuer", root.GetName())
	}
}
