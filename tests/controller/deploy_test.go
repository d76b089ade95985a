// SPDX-License-Identifier: Apache-2.0

package controller

import (
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
	ctx := t.Context()
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
	checkMetricsService(t, objs, "plugin-controller-metrics", "plugin-controller")
	dryRunApply(t, objs)
}

// TestLabelSyncerKustomizationIsAcceptedByTheAPIServer: deploy/label-syncer,
// installed on its own, ships what deploy/controller does for metrics (the
// HTTPS Service and the metrics-reader ClusterRole), and the API server
// accepts all of it.
func TestLabelSyncerKustomizationIsAcceptedByTheAPIServer(t *testing.T) {
	ctx := t.Context()
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controllerNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	objs := kustomize(t, "deploy", "label-syncer")
	want := []string{
		"ClusterRole/label-syncer", "ClusterRole/label-syncer-metrics-reader", "ClusterRoleBinding/label-syncer",
		"Deployment/label-syncer", "Role/label-syncer", "RoleBinding/label-syncer",
		"Service/label-syncer-metrics", "ServiceAccount/label-syncer",
	}
	if got := kinds(objs); !slices.Equal(got, want) {
		t.Fatalf("deploy/label-syncer builds\n%v\nwant\n%v", got, want)
	}
	checkMetricsService(t, objs, "label-syncer-metrics", "label-syncer")
	dryRunApply(t, objs)
}

// checkMetricsService: the Service named service selects the Pods of the
// Deployment named deployment (and nothing wider than its selector) and
// sends port 8443 to the container port the metrics are served on.
func checkMetricsService(t *testing.T, objs []*unstructured.Unstructured, service, deployment string) {
	t.Helper()
	var svc, dep *unstructured.Unstructured
	for _, o := range objs {
		switch {
		case o.GetKind() == "Service" && o.GetName() == service:
			svc = o
		case o.GetKind() == "Deployment" && o.GetName() == deployment:
			dep = o
		}
	}
	if svc == nil || dep == nil {
		t.Fatalf("want Service %s and Deployment %s, got %v", service, deployment, kinds(objs))
	}
	selector, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")
	podLabels, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "template", "metadata", "labels")
	if len(selector) == 0 {
		t.Errorf("Service %s selects nothing", service)
	}
	for k, v := range selector {
		if podLabels[k] != v {
			t.Errorf("Service %s selects %s=%s, which the Pods of %s do not carry (%v)", service, k, v, deployment, podLabels)
		}
	}
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if len(ports) != 1 {
		t.Fatalf("Service %s has ports %v, want the metrics port alone", service, ports)
	}
	port := ports[0].(map[string]any)
	target, _ := port["targetPort"].(string)
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	var containerPort int64
	for _, c := range containers {
		cports, _, _ := unstructured.NestedSlice(c.(map[string]any), "ports")
		for _, cp := range cports {
			if cp.(map[string]any)["name"] == target {
				containerPort, _, _ = unstructured.NestedInt64(cp.(map[string]any), "containerPort")
			}
		}
	}
	if containerPort != 8443 || port["port"] != int64(8443) {
		t.Errorf("Service %s sends port %v to targetPort %q (container port %d), want 8443 to the metrics port 8443", service, port["port"], target, containerPort)
	}
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
		err := admin.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(o),
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
