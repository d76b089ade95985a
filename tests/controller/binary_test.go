// SPDX-License-Identifier: Apache-2.0

package controller

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubevirt-plugins/framework/tests/framework/gobuild"
	"github.com/kubevirt-plugins/framework/tests/framework/poll"
	"github.com/kubevirt-plugins/framework/tests/framework/ports"
)

// The binary runs as the controller's ServiceAccount with exactly the RBAC
// of deploy/controller/rbac, in the namespace the manifests use.
const (
	controllerNamespace = "kubevirt"
	controllerUser      = "system:serviceaccount:kubevirt:plugin-controller"
)

var rbacOnce sync.Once

// controllerKubeconfig applies the generated RBAC and its bindings and
// returns a kubeconfig authenticating as the controller's ServiceAccount.
func controllerKubeconfig(t *testing.T) string {
	t.Helper()
	rbacOnce.Do(func() {
		if err := admin.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controllerNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		applyManifest(t, "deploy", "controller", "rbac", "role.yaml")
		applyManifest(t, "deploy", "controller", "rbac", "bindings.yaml")
	})
	path, err := server.Kubeconfig(envtest.User{Name: controllerUser, Groups: []string{"system:serviceaccounts", "system:authenticated"}}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// controllerBinary is cmd/plugin-controller, built statically as the
// image has it; main_test.go removes it.
var controllerBinary = &gobuild.Binary{Module: "plugin-controller", Pkg: "./cmd/plugin-controller"}

// lockedBuffer collects the process output.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type runningBinary struct {
	probe, metrics, webhook int
	logs                    *lockedBuffer
}

// startBinary runs the controller with args plus ports of its own, stops it
// with SIGTERM at cleanup and checks it exits cleanly.
func startBinary(t *testing.T, args ...string) *runningBinary {
	t.Helper()
	kubeconfig := controllerKubeconfig(t)
	return startOnFreePorts(t, "plugin-controller", controllerBinary.Path(t), 3, func(rb *runningBinary, p []int) []string {
		rb.probe, rb.metrics, rb.webhook = p[0], p[1], p[2]
		return append([]string{
			"--kubeconfig", kubeconfig,
			"--health-probe-bind-address", "127.0.0.1:" + strconv.Itoa(rb.probe),
			"--metrics-bind-address", "127.0.0.1:" + strconv.Itoa(rb.metrics),
			"--webhook-port", strconv.Itoa(rb.webhook),
			"--leader-election-namespace", controllerNamespace,
		}, args...)
	})
}

// startOnFreePorts runs the binary at path with the arguments args returns
// for n fresh ports (which it records in rb), and waits until it is ready;
// a binary that found one of its ports taken runs again on others.
func startOnFreePorts(t *testing.T, name, path string, n int, args func(rb *runningBinary, ports []int) []string) *runningBinary {
	t.Helper()
	var rb *runningBinary
	err := ports.Retry(n, func(p []int) error {
		rb = &runningBinary{logs: &lockedBuffer{}}
		return rb.start(t, name, path, args(rb, p))
	})
	if err != nil {
		t.Fatal(err)
	}
	return rb
}

// start runs the binary at path with args, which bind rb's ports, and
// waits until it is ready, or returns why it is not, with its logs. Once
// started, it is stopped at cleanup and must exit cleanly.
func (rb *runningBinary) start(t *testing.T, name, path string, args []string) error {
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = rb.logs, rb.logs
	if err := cmd.Start(); err != nil {
		return err
	}
	running, done := poll.WhileRunning(t.Context(), cmd)
	if err := poll.UntilContext(running, 60*time.Second, func() error { return rb.ready(cmd.Process.Pid) }); err != nil {
		_ = cmd.Process.Kill()
		<-done //nolint:errcheck // only waits for the exit; the process did not start
		return ports.InUse(fmt.Errorf("%s not ready: %w; logs:\n%s", name, err, rb.logs), rb.logs.String())
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s exited with %v; logs:\n%s", name, err, rb.logs)
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done //nolint:errcheck // only waits for the exit; the process was stopped on purpose
			t.Errorf("%s did not stop on SIGTERM; logs:\n%s", name, rb.logs)
		}
		if strings.Contains(strings.ToLower(rb.logs.String()), "forbidden") {
			t.Errorf("the generated RBAC of %s is missing a permission; logs:\n%s", name, rb.logs)
		}
	})
	return nil
}

// ready: the binary pid says it is ready, and it listens on its probe and
// metrics ports itself (its readiness does not cover the metrics server,
// and another process may answer on a port it failed to bind).
func (rb *runningBinary) ready(pid int) error {
	if err := httpOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", rb.probe)); err != nil {
		return err
	}
	return ports.Bound(pid, rb.probe, rb.metrics)
}

func httpOK(url string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", url, resp.Status, body)
	}
	return nil
}

// pemCerts returns the DER bytes of each certificate in a PEM bundle.
func pemCerts(t *testing.T, bundle []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for {
		var block *pem.Block
		if block, bundle = pem.Decode(bundle); block == nil {
			return out
		}
		out = append(out, block.Bytes)
	}
}

func TestBinaryWithSelfSignedCertsPublishesTheCAAndServesWithIt(t *testing.T) {
	ctx := t.Context()
	var before admissionregistrationv1.ValidatingWebhookConfiguration
	if err := admin.Get(ctx, client.ObjectKey{Name: "plugin-controller"}, &before); err != nil {
		t.Fatal(err)
	}
	previous := pemCerts(t, before.Webhooks[0].ClientConfig.CABundle)

	rb := startBinary(t,
		"--leader-elect",
		"--webhook-cert-dir", t.TempDir(),
		"--webhook-service-name", "plugin-controller-webhook",
		"--webhook-service-namespace", controllerNamespace,
	)

	// The caBundle of the webhook configuration trusts the served
	// certificate for the Service's name. (The configuration is the
	// envtest-installed one: its own CA must stay in the bundle, or the
	// other tests' webhook calls would fail.)
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	var pool *x509.CertPool
	poll.Until(t, "the caBundle trusts the served certificate", 30*time.Second, func() error {
		if err := admin.Get(ctx, client.ObjectKey{Name: "plugin-controller"}, &vwc); err != nil {
			return err
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(vwc.Webhooks[0].ClientConfig.CABundle) {
			return fmt.Errorf("caBundle holds no certificate")
		}
		conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(rb.webhook)), &tls.Config{
			RootCAs: pool, ServerName: "plugin-controller-webhook.kubevirt.svc",
		})
		if err != nil {
			return fmt.Errorf("webhook certificate not trusted by the caBundle: %w", err)
		}
		return conn.Close()
	})
	// The shared CA comes first, and the CAs that were there (envtest's,
	// and those of earlier runs) follow, up to the default bound of 4.
	shared := sharedCA(t)
	published := pemCerts(t, vwc.Webhooks[0].ClientConfig.CABundle)
	want := append([][]byte{shared.Raw}, slices.DeleteFunc(previous, func(c []byte) bool { return bytes.Equal(c, shared.Raw) })...)
	want = want[:min(len(want), 4)]
	if !slices.EqualFunc(published, want, bytes.Equal) {
		t.Errorf("caBundle holds %d CAs, want %d: the shared CA first, then the ones that were there", len(published), len(want))
	}

	// It won the Lease and runs its reconciler.
	poll.Until(t, "the binary holds the Lease", 30*time.Second, func() error {
		var lease coordinationv1.Lease
		if err := admin.Get(ctx, client.ObjectKey{Namespace: controllerNamespace, Name: "plugin-controller.plugin.kubevirt.io"}, &lease); err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			return fmt.Errorf("lease has no holder")
		}
		return nil
	})
	if err := httpOK(fmt.Sprintf("http://127.0.0.1:%d/healthz", rb.probe)); err != nil {
		t.Error(err)
	}
}

func TestBinaryWithoutWebhookRunsTheReconcilerAlone(t *testing.T) {
	rb := startBinary(t, "--enable-webhook=false")
	if conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(rb.webhook)), time.Second); err == nil {
		_ = conn.Close()
		t.Fatal("something listens on the webhook port with --enable-webhook=false")
	}
	if !strings.Contains(rb.logs.String(), `"webhook": false`) && !strings.Contains(rb.logs.String(), `"webhook":false`) {
		t.Errorf("start-up log does not say the webhook is off:\n%s", rb.logs)
	}
}

// caSecret is where the binaries keep the CA they share.
var caSecret = client.ObjectKey{Namespace: controllerNamespace, Name: "plugin-controller-webhook-ca"}

// sharedCA reads the CA the replicas share from its Secret.
func sharedCA(t *testing.T) *x509.Certificate {
	t.Helper()
	var s corev1.Secret
	if err := admin.Get(t.Context(), caSecret, &s); err != nil {
		t.Fatalf("reading the CA Secret: %v", err)
	}
	certs := pemCerts(t, s.Data["ca.crt"])
	if len(certs) != 1 {
		t.Fatalf("the CA Secret holds %d certificates in ca.crt", len(certs))
	}
	c, err := x509.ParseCertificate(certs[0])
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const webhookServerName = "plugin-controller-webhook.kubevirt.svc"

// servedBy dials a replica's webhook port trusting exactly roots.
func servedBy(rb *runningBinary, roots *x509.CertPool) error {
	conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(rb.webhook)), &tls.Config{
		RootCAs: roots, ServerName: webhookServerName,
	})
	if err != nil {
		return fmt.Errorf("replica on port %d: %w", rb.webhook, err)
	}
	return conn.Close()
}

// bothTrustedByTheBundle: the caBundle of the configuration trusts the
// serving certificates of every replica.
func bothTrustedByTheBundle(ctx context.Context, replicas ...*runningBinary) (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := admin.Get(ctx, client.ObjectKey{Name: "plugin-controller"}, &vwc); err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(vwc.Webhooks[0].ClientConfig.CABundle) {
		return nil, fmt.Errorf("caBundle holds no certificate")
	}
	for _, rb := range replicas {
		if err := servedBy(rb, pool); err != nil {
			return nil, fmt.Errorf("not trusted by the caBundle: %w", err)
		}
	}
	return &vwc, nil
}

func startReplicas(t *testing.T, args ...string) []*runningBinary {
	t.Helper()
	var out []*runningBinary
	for range 2 {
		out = append(out, startBinary(t, append([]string{
			"--leader-elect", "--webhook-cert-dir", t.TempDir(), "--webhook-service-namespace", controllerNamespace,
		}, args...)...))
	}
	return out
}

// bundleKept is what the binary logs, at debug level, each time a check
// finds the caBundle as it should be.
const bundleKept = "webhook caBundle already trusts the CA"

func TestTwoReplicasServeTheWebhookWithOneSharedCAAndTheBundleStaysStable(t *testing.T) {
	const interval = 200 * time.Millisecond
	replicas := startReplicas(t, "--webhook-cert-check-interval", interval.String(), "--zap-log-level=debug")
	poll.Until(t, "the caBundle trusts both replicas", 30*time.Second, func() error {
		_, err := bothTrustedByTheBundle(t.Context(), replicas...)
		return err
	})
	// Both serving certificates are signed by the one CA in the Secret.
	shared := x509.NewCertPool()
	shared.AddCert(sharedCA(t))
	for _, rb := range replicas {
		if err := servedBy(rb, shared); err != nil {
			t.Errorf("not signed by the shared CA: %v", err)
		}
	}
	// Many checks later, by both replicas, nobody has written the
	// configuration again.
	before, err := bothTrustedByTheBundle(t.Context(), replicas...)
	if err != nil {
		t.Fatal(err)
	}
	checked := make([]int, len(replicas))
	for i, rb := range replicas {
		checked[i] = strings.Count(rb.logs.String(), bundleKept)
	}
	poll.Until(t, "both replicas check the caBundle five more times", 30*time.Second, func() error {
		for i, rb := range replicas {
			if n := strings.Count(rb.logs.String(), bundleKept) - checked[i]; n < 5 {
				return fmt.Errorf("replica %d found the caBundle as it should be %d times", i, n)
			}
		}
		return nil
	})
	after, err := bothTrustedByTheBundle(t.Context(), replicas...)
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion || !bytes.Equal(after.Webhooks[0].ClientConfig.CABundle, before.Webhooks[0].ClientConfig.CABundle) {
		t.Fatalf("the configuration was written again (resourceVersion %s -> %s) with two replicas and no change", before.ResourceVersion, after.ResourceVersion)
	}
}

func TestCABundleIsInjectedAsSoonAsTheWebhookConfigurationIsCreated(t *testing.T) {
	ctx := t.Context()
	var saved admissionregistrationv1.ValidatingWebhookConfiguration
	if err := admin.Get(ctx, client.ObjectKey{Name: "plugin-controller"}, &saved); err != nil {
		t.Fatal(err)
	}
	// recreate also runs as a cleanup, when the test's context is done.
	recreate := func() error {
		vwc := saved.DeepCopy()
		vwc.ObjectMeta = metav1.ObjectMeta{Name: saved.Name, Labels: saved.Labels, Annotations: saved.Annotations}
		return admin.Create(context.WithoutCancel(ctx), vwc)
	}
	if err := admin.Delete(ctx, &saved); err != nil {
		t.Fatal(err)
	}
	// The other tests need envtest's configuration (and CA) back.
	t.Cleanup(func() {
		if err := recreate(); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Errorf("restoring the webhook configuration: %v", err)
		}
	})
	// The default check interval (5 minutes) is far beyond the deadline
	// below: only the watch can explain a prompt caBundle.
	replicas := startReplicas(t)
	if err := recreate(); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	poll.Until(t, "the caBundle trusts both replicas", 15*time.Second, func() error {
		_, err := bothTrustedByTheBundle(t.Context(), replicas...)
		return err
	})
	t.Logf("caBundle trusted both replicas %s after the configuration was created", time.Since(created).Round(time.Millisecond))
}
