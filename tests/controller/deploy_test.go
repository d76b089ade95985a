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

	"github.com/kubevirt-plugins/framework/api/sidecarinjection"
	sidecarwebhook "github.com/kubevirt-plugins/framework/plugin-controller/webhooks/sidecar"
	kustomizebuild "github.com/kubevirt-plugins/framework/tests/framework/kustomize"
	"github.com/kubevirt-plugins/framework/tests/framework/repo"
)

// kustomize builds a kustomization of the repository into objects.
func kustomize(t *testing.T, rel ...string) []*unstructured.Unstructured {
	t.Helper()
	dir, err := repo.Path(rel...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := kustomizebuild.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	return objs
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
		"PodDisruptionBudget/plugin-controller", "Role/plugin-controller", "RoleBinding/plugin-controller", "Service/plugin-controller-metrics", "Service/plugin-controller-webhook",
		"ServiceAccount/plugin-controller", "ValidatingAdmissionPolicy/kubevirt-plugin-sockets-subpath",
		"ValidatingAdmissionPolicyBinding/kubevirt-plugin-sockets-subpath",
		"ValidatingWebhookConfiguration/plugin-controller",
	}
	if got := kinds(objs); !slices.Equal(got, want) {
		t.Fatalf("deploy/ builds\n%v\nwant\n%v", got, want)
	}
	checkMetricsService(t, objs, "plugin-controller-metrics", "plugin-controller")
	checkDisruptionBudget(t, objs, "plugin-controller", "plugin-controller")
	dryRunApply(t, objs)
}

// find returns the object of that kind and name in objs, or fails.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s/%s in %v", kind, name, kinds(objs))
	return nil
}

// checkDisruptionBudget: the PodDisruptionBudget named pdb selects the
// Pods of the Deployment named deployment, keeps one of them running, and
// leaves one that a drain may evict, so that the webhook always has a
// replica to answer; the Pods wait (preStop) before they stop serving.
func checkDisruptionBudget(t *testing.T, objs []*unstructured.Unstructured, pdb, deployment string) {
	t.Helper()
	budget, dep := find(t, objs, "PodDisruptionBudget", pdb), find(t, objs, "Deployment", deployment)
	if budget.GetNamespace() != dep.GetNamespace() {
		t.Errorf("PodDisruptionBudget %s in namespace %q, its Deployment in %q", pdb, budget.GetNamespace(), dep.GetNamespace())
	}
	selector, _, _ := unstructured.NestedStringMap(budget.Object, "spec", "selector", "matchLabels")
	if expr, _, _ := unstructured.NestedSlice(budget.Object, "spec", "selector", "matchExpressions"); len(selector) == 0 || len(expr) != 0 {
		t.Errorf("PodDisruptionBudget %s selects %v %v, want matchLabels alone", pdb, selector, expr)
	}
	podLabels, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "template", "metadata", "labels")
	for k, v := range selector {
		if podLabels[k] != v {
			t.Errorf("PodDisruptionBudget %s selects %s=%s, which the Pods of %s do not carry (%v)", pdb, k, v, deployment, podLabels)
		}
	}
	minAvailable, _, _ := unstructured.NestedFieldNoCopy(budget.Object, "spec", "minAvailable")
	replicas, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas")
	if minAvailable != int64(1) || replicas < 2 {
		t.Errorf("PodDisruptionBudget %s minAvailable %v for %d replicas, want 1 of at least 2", pdb, minAvailable, replicas)
	}
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	if len(containers) == 0 {
		t.Fatalf("Deployment %s has no containers", deployment)
	}
	if sleep, _, _ := unstructured.NestedInt64(containers[0].(map[string]any), "lifecycle", "preStop", "sleep", "seconds"); sleep <= 0 {
		t.Errorf("Deployment %s has no preStop sleep: a deleted Pod would stop serving before its endpoint is gone", deployment)
	}
}

// TestSidecarInjectorKustomizationPointsAtTheControllersInjector:
// deploy/sidecar-injector, installed on its own, registers the webhook the
// controller serves (sidecarwebhook.Path behind the Service that
// deploy/controller installs) for the creation of launcher Pods alone,
// refuses them when no replica answers, the controller may fill its
// caBundle, and the API server accepts it.
func TestSidecarInjectorKustomizationPointsAtTheControllersInjector(t *testing.T) {
	objs := kustomize(t, "deploy", "sidecar-injector")
	if got, want := kinds(objs), []string{"MutatingWebhookConfiguration/kubevirt-plugin-sidecar-injector"}; !slices.Equal(got, want) {
		t.Fatalf("deploy/sidecar-injector builds %v, want %v", got, want)
	}
	mwc := objs[0]
	controller := kustomize(t, "deploy", "controller")
	checkInjectorWebhook(t, mwc, controller)

	// The controller may write the caBundle (self-signed mode).
	role := find(t, controller, "ClusterRole", "plugin-controller")
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	mayUpdate := false
	for _, r := range rules {
		rule := r.(map[string]any)
		resources, _, _ := unstructured.NestedStringSlice(rule, "resources")
		names, _, _ := unstructured.NestedStringSlice(rule, "resourceNames")
		verbs, _, _ := unstructured.NestedStringSlice(rule, "verbs")
		if slices.Contains(resources, "mutatingwebhookconfigurations") && slices.Contains(names, mwc.GetName()) && slices.Contains(verbs, "update") {
			mayUpdate = true
		}
	}
	if !mayUpdate {
		t.Errorf("ClusterRole plugin-controller may not update MutatingWebhookConfiguration %s: its caBundle would stay empty", mwc.GetName())
	}
	dryRunApply(t, objs)
}

// checkInjectorWebhook checks the one webhook of mwc against the
// controller's manifests.
func checkInjectorWebhook(t *testing.T, mwc *unstructured.Unstructured, controller []*unstructured.Unstructured) {
	t.Helper()
	webhooks, _, _ := unstructured.NestedSlice(mwc.Object, "webhooks")
	if len(webhooks) != 1 {
		t.Fatalf("%d webhooks, want one", len(webhooks))
	}
	wh := webhooks[0].(map[string]any)
	str := func(path ...string) string {
		v, _, _ := unstructured.NestedString(wh, path...)
		return v
	}

	svc := find(t, controller, "Service", "plugin-controller-webhook")
	if name, ns := str("clientConfig", "service", "name"), str("clientConfig", "service", "namespace"); name != svc.GetName() || ns != svc.GetNamespace() {
		t.Errorf("webhook calls Service %s/%s, want %s/%s", ns, name, svc.GetNamespace(), svc.GetName())
	}
	if p := str("clientConfig", "service", "path"); p != sidecarwebhook.Path {
		t.Errorf("webhook path %q, want %q, where the controller serves the injector", p, sidecarwebhook.Path)
	}
	port, found, _ := unstructured.NestedInt64(wh, "clientConfig", "service", "port")
	if !found {
		port = 443
	}
	svcPorts, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if !slices.ContainsFunc(svcPorts, func(p any) bool { return p.(map[string]any)["port"] == port }) {
		t.Errorf("webhook calls port %d, which Service %s does not expose (%v)", port, svc.GetName(), svcPorts)
	}
	// The same endpoint as the Plugin webhook, whose calls the other tests
	// make: one server, one certificate.
	vwc := find(t, controller, "ValidatingWebhookConfiguration", "plugin-controller")
	validating, _, _ := unstructured.NestedSlice(vwc.Object, "webhooks")
	vport, _, _ := unstructured.NestedInt64(validating[0].(map[string]any), "clientConfig", "service", "port")
	if vport != port {
		t.Errorf("webhook calls port %d, the Plugin webhook %d", port, vport)
	}

	selector, _, _ := unstructured.NestedStringMap(wh, "objectSelector", "matchLabels")
	expr, _, _ := unstructured.NestedSlice(wh, "objectSelector", "matchExpressions")
	if len(selector) != 1 || selector[sidecarinjection.LauncherLabel] != sidecarinjection.LauncherLabelValue || len(expr) != 0 {
		t.Errorf("objectSelector %v %v, want matchLabels %s: %s alone: other Pods must not depend on the webhook",
			selector, expr, sidecarinjection.LauncherLabel, sidecarinjection.LauncherLabelValue)
	}
	rules, _, _ := unstructured.NestedSlice(wh, "rules")
	if len(rules) != 1 {
		t.Fatalf("rules %v, want one", rules)
	}
	rule := rules[0].(map[string]any)
	list := func(key string) []string {
		v, _, _ := unstructured.NestedStringSlice(rule, key)
		return v
	}
	if !slices.Equal(list("apiGroups"), []string{""}) || !slices.Equal(list("apiVersions"), []string{"v1"}) ||
		!slices.Equal(list("resources"), []string{"pods"}) || !slices.Equal(list("operations"), []string{"CREATE"}) {
		t.Errorf("rule %v, want the creation of core v1 pods alone", rule)
	}
	for field, want := range map[string]string{
		"failurePolicy": "Fail", "sideEffects": "None", "reinvocationPolicy": "Never", "matchPolicy": "Equivalent",
	} {
		if got := str(field); got != want {
			t.Errorf("%s %q, want %q", field, got, want)
		}
	}
	if timeout, _, _ := unstructured.NestedInt64(wh, "timeoutSeconds"); timeout != 10 {
		t.Errorf("timeoutSeconds %d, want 10", timeout)
	}
	if versions, _, _ := unstructured.NestedStringSlice(wh, "admissionReviewVersions"); !slices.Equal(versions, []string{"v1"}) {
		t.Errorf("admissionReviewVersions %v, want [v1]", versions)
	}
	if bundle := str("clientConfig", "caBundle"); bundle != "" {
		t.Errorf("the manifest carries a caBundle; the controller or cert-manager fills it")
	}
}

// TestCertManagerSidecarInjectorOverlayInjectsTheWebhooksCA: the
// cert-manager variant of deploy/sidecar-injector is the same webhook,
// with its caBundle injected from the Certificate deploy/cert-manager
// issues for the webhook Service.
func TestCertManagerSidecarInjectorOverlayInjectsTheWebhooksCA(t *testing.T) {
	objs := kustomize(t, "deploy", "cert-manager", "sidecar-injector")
	if got, want := kinds(objs), []string{"MutatingWebhookConfiguration/kubevirt-plugin-sidecar-injector"}; !slices.Equal(got, want) {
		t.Fatalf("deploy/cert-manager/sidecar-injector builds %v, want %v", got, want)
	}
	mwc := objs[0]
	certManager := kustomize(t, "deploy", "cert-manager")
	from := mwc.GetAnnotations()["cert-manager.io/inject-ca-from"]
	ns, name, _ := strings.Cut(from, "/")
	cert := find(t, certManager, "Certificate", name)
	if cert.GetNamespace() != ns {
		t.Fatalf("inject-ca-from %q, but Certificate %s is in namespace %q", from, name, cert.GetNamespace())
	}
	// The Certificate the validating webhook's CA comes from, too.
	vwc := find(t, certManager, "ValidatingWebhookConfiguration", "plugin-controller")
	if got := vwc.GetAnnotations()["cert-manager.io/inject-ca-from"]; got != from {
		t.Errorf("inject-ca-from %q, the Plugin webhook's %q", from, got)
	}
	checkInjectorWebhook(t, mwc, certManager)
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
	checkDisruptionBudget(t, objs, "plugin-controller", "plugin-controller")
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
