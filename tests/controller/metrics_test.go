// SPDX-License-Identifier: Apache-2.0

package controller

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubevirt-plugins/framework/tests/framework/gobuild"
	"github.com/kubevirt-plugins/framework/tests/framework/poll"
)

// serviceAccountToken creates the ServiceAccount (in the controller's
// namespace) and returns a token the API server issued for it.
func serviceAccountToken(t *testing.T, name string) string {
	t.Helper()
	ctx := t.Context()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: controllerNamespace}}
	if err := admin.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(server.Config)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(controllerNamespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(600))},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token for ServiceAccount %s: %v", name, err)
	}
	return tr.Status.Token
}

// bindMetricsReader binds deploy/controller/rbac/metrics-reader.yaml's
// ClusterRole to the ServiceAccount.
func bindMetricsReader(t *testing.T, role, serviceAccount string) {
	t.Helper()
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: serviceAccount + "-" + role},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: serviceAccount, Namespace: controllerNamespace}},
	}
	if err := admin.Create(t.Context(), b); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// getMetrics GETs url with the bearer token ("" sends none), trusting any
// server certificate: what is checked here is who may read, not the
// server's identity.
func getMetrics(url, token string) (int, string, error) {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// syncerBinary is label-syncer's command, built statically.
var syncerBinary = &gobuild.Binary{Module: "label-syncer", Pkg: "./cmd/label-syncer"}

var syncerRBACOnce sync.Once

// startSyncer runs label-syncer as its ServiceAccount with the RBAC of
// deploy/label-syncer (KubeVirt's CRDs are installed for this package).
func startSyncer(t *testing.T) *runningBinary {
	t.Helper()
	controllerKubeconfig(t) // the namespace
	syncerRBACOnce.Do(func() {
		applyManifest(t, "deploy", "label-syncer", "rbac", "role.yaml")
		applyManifest(t, "deploy", "label-syncer", "bindings.yaml")
	})
	kubeconfig, err := server.Kubeconfig(envtest.User{
		Name: "system:serviceaccount:kubevirt:label-syncer", Groups: []string{"system:serviceaccounts", "system:authenticated"},
	}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return startOnFreePorts(t, "label-syncer", syncerBinary.Path(t), 2, func(rb *runningBinary, p []int) []string {
		rb.probe, rb.metrics = p[0], p[1]
		return []string{
			"--kubeconfig", kubeconfig,
			"--additional-launcher-labels-sync=ops.example.com/*",
			"--health-probe-bind-address", "127.0.0.1:" + strconv.Itoa(rb.probe),
			"--metrics-bind-address", "127.0.0.1:" + strconv.Itoa(rb.metrics),
		}
	})
}

func TestMetricsAreServedOverHTTPSOnlyToTokensAuthorizedForThem(t *testing.T) {
	cases := []struct {
		binary, readerRole, manifest string
		start                        func(*testing.T) *runningBinary
		// metric is a line the binary's own metrics hold.
		metric string
	}{
		{
			binary: "plugin-controller", readerRole: "plugin-controller-metrics-reader",
			manifest: "deploy/controller/rbac/metrics-reader.yaml",
			start:    func(t *testing.T) *runningBinary { return startBinary(t, "--enable-webhook=false") },
			metric:   `controller_runtime_active_workers{controller="plugin-controller"}`,
		},
		{
			binary: "label-syncer", readerRole: "label-syncer-metrics-reader",
			manifest: "deploy/label-syncer/metrics-reader.yaml",
			start:    startSyncer,
			metric:   `controller_runtime_active_workers{controller="labelsync-vmi-to-pod"}`,
		},
	}
	for _, bc := range cases {
		t.Run(bc.binary, func(t *testing.T) {
			rb := bc.start(t)
			for _, o := range applyManifest(t, strings.Split(bc.manifest, "/")...) {
				deleteAfter(t, o) // go test -count creates it again
			}
			reader := serviceAccountToken(t, bc.binary+"-scraper")
			bindMetricsReader(t, bc.readerRole, bc.binary+"-scraper")
			stranger := serviceAccountToken(t, "metrics-stranger")
			checkMetricsAccess(t, fmt.Sprintf("https://127.0.0.1:%d/metrics", rb.metrics), bc.readerRole, bc.metric, reader, stranger)
		})
	}
}

// checkMetricsAccess: the reader's token gets the metrics, nobody else
// does, and plain HTTP is not answered.
func checkMetricsAccess(t *testing.T, url, role, metric, reader, stranger string) {
	t.Helper()
	// The role holder is answered (once the binding is in the authorizer's
	// view), with the binary's metrics.
	poll.Until(t, "the reader gets the metrics", 30*time.Second, func() error {
		code, body, err := getMetrics(url, reader)
		switch {
		case err != nil:
			return err
		case code != http.StatusOK:
			return fmt.Errorf("token with %s: %d %.200s", role, code, body)
		case !strings.Contains(body, metric):
			return fmt.Errorf("metrics lack %s", metric)
		}
		return nil
	})
	cases := []struct {
		name, token string
		want        []int
	}{
		{"no token", "", []int{http.StatusUnauthorized}},
		// The API server's TokenReview answers with an error for it, which
		// controller-runtime's filter turns into 500 "Authentication failed".
		{"a token the API server did not issue", "not-a-token", []int{http.StatusUnauthorized, http.StatusInternalServerError}},
		{"a valid token without the role", stranger, []int{http.StatusForbidden}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body, err := getMetrics(url, tc.token)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(tc.want, code) || strings.Contains(body, "controller_runtime") {
				t.Fatalf("answered %d %.200q, want one of %v and no metrics", code, body, tc.want)
			}
		})
	}
	// Plain HTTP gets no metrics at all.
	code, body, err := getMetrics(strings.Replace(url, "https://", "http://", 1), reader)
	if err == nil && (code == http.StatusOK || strings.Contains(body, "controller_runtime")) {
		t.Fatalf("plain HTTP answered %d with metrics", code)
	}
}
