// SPDX-License-Identifier: Apache-2.0

package servingcert

import (
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

const (
	vwcName = "plugin-controller"
	mwcName = "kubevirt-plugin-sidecar-injector"
	dnsName = "plugin-controller-webhook.kubevirt.svc"
)

type harness struct {
	t      *testing.T
	dir    string
	clock  *clocktesting.FakeClock
	client client.WithWatch
	r      *Rotator
	logs   *logRecorder
}

func newHarness(t *testing.T, caValidity, certValidity, renewBefore time.Duration) *harness {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{admissionregistrationv1.AddToScheme, corev1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: vwcName},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{{Name: "a.example.com"}, {Name: "b.example.com"}},
	}
	h := &harness{
		t:      t,
		dir:    t.TempDir(),
		clock:  clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(vwc).Build(),
		logs:   &logRecorder{},
	}
	// The MutatingWebhookConfiguration is named but not installed: tests
	// that need it call installMutating.
	r, err := New(Options{
		CertDir: h.dir, DNSNames: []string{dnsName}, WebhookConfigurationName: vwcName, MutatingWebhookConfigurationName: mwcName,
		Client: h.client, CAValidity: caValidity, CertValidity: certValidity, RenewBefore: renewBefore, Clock: h.clock,
		Logger: logr.New(h.logs),
	})
	if err != nil {
		t.Fatal(err)
	}
	h.r = r
	return h
}

func (h *harness) ensure() {
	h.t.Helper()
	if err := h.r.Ensure(h.t.Context()); err != nil {
		h.t.Fatalf("Ensure at %v: %v", h.clock.Now(), err)
	}
}

func (h *harness) serving() *x509.Certificate {
	h.t.Helper()
	kp, err := parseFiles(h.dir, CertFile, KeyFile)
	if err != nil {
		h.t.Fatalf("reading serving certificate: %v", err)
	}
	return kp.cert
}

func parseFiles(dir, cert, key string) (*keyPair, error) {
	c, err := os.ReadFile(filepath.Join(dir, cert))
	if err != nil {
		return nil, err
	}
	k, err := os.ReadFile(filepath.Join(dir, key))
	if err != nil {
		return nil, err
	}
	return parseKeyPair(c, k)
}

// installMutating creates the MutatingWebhookConfiguration, with two
// webhooks and no caBundle.
func (h *harness) installMutating() {
	h.t.Helper()
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: mwcName},
		Webhooks:   []admissionregistrationv1.MutatingWebhook{{Name: "c.example.com"}, {Name: "d.example.com"}},
	}
	if err := h.client.Create(h.t.Context(), mwc); err != nil {
		h.t.Fatal(err)
	}
}

// bundles returns the caBundle of each webhook: those of the validating
// configuration, then those of the mutating one when it is installed.
func (h *harness) bundles() [][]*x509.Certificate {
	h.t.Helper()
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := h.client.Get(h.t.Context(), client.ObjectKey{Name: vwcName}, &vwc); err != nil {
		h.t.Fatal(err)
	}
	var out [][]*x509.Certificate
	for _, w := range vwc.Webhooks {
		out = append(out, parseBundle(w.ClientConfig.CABundle))
	}
	var mwc admissionregistrationv1.MutatingWebhookConfiguration
	err := h.client.Get(h.t.Context(), client.ObjectKey{Name: mwcName}, &mwc)
	if apierrors.IsNotFound(err) {
		return out
	}
	if err != nil {
		h.t.Fatal(err)
	}
	for _, w := range mwc.Webhooks {
		out = append(out, parseBundle(w.ClientConfig.CABundle))
	}
	return out
}

// mutatingBundles returns the caBundle of each webhook of the mutating
// configuration.
func (h *harness) mutatingBundles() [][]*x509.Certificate {
	h.t.Helper()
	var mwc admissionregistrationv1.MutatingWebhookConfiguration
	if err := h.client.Get(h.t.Context(), client.ObjectKey{Name: mwcName}, &mwc); err != nil {
		h.t.Fatal(err)
	}
	var out [][]*x509.Certificate
	for _, w := range mwc.Webhooks {
		out = append(out, parseBundle(w.ClientConfig.CABundle))
	}
	return out
}

// trusted reports whether every webhook's caBundle verifies cert now.
func (h *harness) trusted(cert *x509.Certificate) error {
	for _, b := range h.bundles() {
		pool := x509.NewCertPool()
		for _, c := range b {
			pool.AddCert(c)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: dnsName, CurrentTime: h.clock.Now()}); err != nil {
			return err
		}
	}
	return nil
}

func TestServingCertificateIsRenewedBeforeItExpires(t *testing.T) {
	h := newHarness(t, 10*time.Hour, time.Hour, 20*time.Minute)
	h.ensure()
	first := h.serving()
	if err := h.trusted(first); err != nil {
		t.Fatalf("first certificate not trusted by the caBundle: %v", err)
	}

	h.clock.Step(30 * time.Minute) // 30m left: more than RenewBefore
	h.ensure()
	if !h.serving().Equal(first) {
		t.Fatal("certificate renewed while more than RenewBefore was left")
	}

	h.clock.Step(15 * time.Minute) // 15m left: renew
	h.ensure()
	second := h.serving()
	if second.Equal(first) {
		t.Fatal("certificate not renewed with less than RenewBefore left")
	}
	if want := h.clock.Now().Add(time.Hour); !second.NotAfter.Equal(want.Truncate(time.Second)) {
		t.Errorf("renewed certificate expires %v, want %v", second.NotAfter, want)
	}
	if err := h.trusted(second); err != nil {
		t.Fatalf("renewed certificate not trusted: %v", err)
	}
}

func TestRenewedCAIsTrustedNextToThePreviousOneUntilItExpires(t *testing.T) {
	h := newHarness(t, 3*time.Hour, time.Hour, 20*time.Minute)
	// Both configurations follow the rotation: bundles() lists the
	// webhooks of each.
	h.installMutating()
	h.ensure()
	if n := len(h.bundles()); n != 4 {
		t.Fatalf("%d webhooks, want the two validating and the two mutating ones", n)
	}
	// Renewals at 50m and 1h40m, both by the first CA (it still has more
	// than a certificate lifetime left).
	h.clock.Step(50 * time.Minute)
	h.ensure()
	h.clock.Step(50 * time.Minute)
	h.ensure()
	oldCert := h.serving()
	oldCA := parseFirstCA(t, h.dir)
	if err := oldCert.CheckSignatureFrom(oldCA); err != nil {
		t.Fatalf("certificate renewed at 1h40m not signed by the first CA: %v", err)
	}

	// At 2h10m the CA has 50m left, less than one certificate lifetime.
	h.clock.Step(30 * time.Minute)
	h.ensure()
	newCert := h.serving()
	if newCert.Equal(oldCert) {
		t.Fatal("serving certificate not reissued after the CA was renewed")
	}
	if err := newCert.CheckSignatureFrom(parseFirstCA(t, h.dir)); err != nil {
		t.Fatalf("new certificate not signed by the current CA: %v", err)
	}
	for i, b := range h.bundles() {
		if len(b) != 2 {
			t.Fatalf("webhook %d caBundle holds %d CAs, want the new and the previous", i, len(b))
		}
	}
	if err := h.trusted(newCert); err != nil {
		t.Fatalf("certificate from the new CA not trusted: %v", err)
	}
	// A replica still serving a certificate from the previous CA keeps working.
	h.clock.Step(5 * time.Minute)
	if err := h.trusted(oldCert); err != nil {
		t.Fatalf("certificate from the previous CA no longer trusted before it expired: %v", err)
	}

	// Past the previous CA's end, the next update drops it.
	h.clock.Step(time.Hour)
	h.ensure()
	for i, b := range h.bundles() {
		for _, c := range b {
			if !h.clock.Now().Before(c.NotAfter) {
				t.Fatalf("webhook %d caBundle still holds a CA that expired at %v", i, c.NotAfter)
			}
		}
	}
}

func parseFirstCA(t *testing.T, dir string) *x509.Certificate {
	t.Helper()
	kp, err := parseFiles(dir, CACertFile, CAKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return kp.cert
}

func TestCertificateIsReissuedForChangedDNSNames(t *testing.T) {
	h := newHarness(t, 10*time.Hour, time.Hour, 20*time.Minute)
	h.ensure()
	first := h.serving()
	r, err := New(Options{CertDir: h.dir, DNSNames: []string{"other.kubevirt.svc"}, Clock: h.clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Ensure(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := h.serving(); got.Equal(first) || got.DNSNames[0] != "other.kubevirt.svc" {
		t.Fatalf("certificate names %v, want a new one for other.kubevirt.svc", got.DNSNames)
	}
}

func TestStartRenewsOnTheCheckInterval(t *testing.T) {
	h := newHarness(t, 10*time.Hour, time.Hour, 20*time.Minute)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- h.r.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	}()
	// Wait for the first check and the ticker, then move past RenewBefore.
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, err := parseFiles(h.dir, CertFile, KeyFile)
		return err == nil && h.clock.HasWaiters(), nil
	}); err != nil {
		t.Fatalf("no certificate and no ticker after the first check: %v", err)
	}
	first := h.serving()
	h.clock.Step(45 * time.Minute)
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		kp, err := parseFiles(h.dir, CertFile, KeyFile)
		return err == nil && !kp.cert.Equal(first), nil
	}); err != nil {
		t.Fatalf("the certificate was not renewed past RenewBefore: %v", err)
	}
}

func TestReplicasSharingTheCASecretAreTrustedByOneBundle(t *testing.T) {
	h := newHarness(t, 10*time.Hour, time.Hour, 20*time.Minute)
	secret := types.NamespacedName{Namespace: "kubevirt", Name: "plugin-controller-webhook-ca"}
	var replicas []*Rotator
	var dirs []string
	for range 2 {
		dir := t.TempDir()
		r, err := New(Options{
			CertDir: dir, DNSNames: []string{dnsName}, WebhookConfigurationName: vwcName, Client: h.client,
			CASecret: &secret, CAValidity: 10 * time.Hour, CertValidity: time.Hour, RenewBefore: 20 * time.Minute, Clock: h.clock,
		})
		if err != nil {
			t.Fatal(err)
		}
		replicas, dirs = append(replicas, r), append(dirs, dir)
	}
	for range 3 { // each replica checks again: nothing may change
		for _, r := range replicas {
			if err := r.Ensure(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
	}
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := h.client.Get(t.Context(), client.ObjectKey{Name: vwcName}, &vwc); err != nil {
		t.Fatal(err)
	}
	bundle := parseBundle(vwc.Webhooks[0].ClientConfig.CABundle)
	if len(bundle) != 1 {
		t.Fatalf("caBundle holds %d CAs, want the one shared CA", len(bundle))
	}
	roots := x509.NewCertPool()
	roots.AddCert(bundle[0])
	for i, dir := range dirs {
		kp, err := parseFiles(dir, CertFile, KeyFile)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kp.cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: dnsName, CurrentTime: h.clock.Now()}); err != nil {
			t.Errorf("replica %d's serving certificate is not trusted by the caBundle: %v", i, err)
		}
	}

	// Near the CA's end one replica replaces it in the Secret; the other
	// follows instead of making its own, and the bundle keeps both CAs.
	h.clock.Step(9*time.Hour + 30*time.Minute)
	for _, r := range replicas {
		if err := r.Ensure(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.client.Get(t.Context(), client.ObjectKey{Name: vwcName}, &vwc); err != nil {
		t.Fatal(err)
	}
	if got := parseBundle(vwc.Webhooks[0].ClientConfig.CABundle); len(got) != 2 || !got[1].Equal(bundle[0]) {
		t.Fatalf("caBundle after the CA renewal holds %d CAs, want the new one and the previous one", len(got))
	}
}

// logRecorder is a logr.LogSink keeping every line, at every verbosity.
type logRecorder struct {
	mu    sync.Mutex
	lines []loggedLine
}

type loggedLine struct {
	level int
	err   error
	msg   string
	kv    []any
}

func (l *logRecorder) Init(logr.RuntimeInfo) {}
func (l *logRecorder) Enabled(int) bool      { return true }
func (l *logRecorder) Info(level int, msg string, kv ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, loggedLine{level: level, msg: msg, kv: kv})
}
func (l *logRecorder) Error(err error, msg string, kv ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, loggedLine{err: err, msg: msg, kv: kv})
}
func (l *logRecorder) WithValues(...any) logr.LogSink { return l }
func (l *logRecorder) WithName(string) logr.LogSink   { return l }

// shown returns the errors and the info lines at verbosity 0 (what a
// production log shows) that mention s.
func (l *logRecorder) shown(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		text := fmt.Sprint(line.msg, line.err, line.kv)
		if (line.err != nil || line.level == 0) && strings.Contains(text, s) {
			out = append(out, text)
		}
	}
	return out
}

func TestMutatingConfigurationGetsTheCAInEveryWebhook(t *testing.T) {
	h := newHarness(t, 10*time.Hour, time.Hour, 20*time.Minute)
	h.installMutating()
	h.ensure()
	for i, b := range h.mutatingBundles() {
		if len(b) != 1 {
			t.Fatalf("mutating webhook %d caBundle holds %d CAs, want the CA", i, len(b))
		}
	}
	if err := h.trusted(h.serving()); err != nil {
		t.Fatalf("serving certificate not trusted by every webhook: %v", err)
	}
}

// A MutatingWebhookConfiguration that is not installed (deploy/
// sidecar-injector is optional) is not an error, and its absence is said
// at debug level only, however often the check runs.
func TestMissingMutatingConfigurationIsNeitherAnErrorNorLogged(t *testing.T) {
	h := newHarness(t, 10*time.Hour, time.Hour, 20*time.Minute)
	for range 3 {
		h.ensure()
		h.clock.Step(10 * time.Minute)
	}
	if err := h.trusted(h.serving()); err != nil {
		t.Fatalf("the validating configuration was not kept: %v", err)
	}
	if lines := h.logs.shown(mwcName); len(lines) != 0 {
		t.Fatalf("the missing configuration was logged above debug level:\n%s", strings.Join(lines, "\n"))
	}
}

// watchSignal closes watching once a watch of MutatingWebhookConfigurations
// is open, so that the test creates one only when the watch can see it.
type watchSignal struct {
	client.WithWatch
	once     sync.Once
	watching chan struct{}
}

func (w *watchSignal) Watch(ctx context.Context, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
	wi, err := w.WithWatch.Watch(ctx, list, opts...)
	if _, ok := list.(*admissionregistrationv1.MutatingWebhookConfigurationList); ok && err == nil {
		w.once.Do(func() { close(w.watching) })
	}
	return wi, err
}

func TestMutatingConfigurationCreatedAfterStartGetsTheCAAtOnce(t *testing.T) {
	h := newHarness(t, 10*time.Hour, time.Hour, 20*time.Minute)
	signal := &watchSignal{WithWatch: h.client, watching: make(chan struct{})}
	r, err := New(Options{
		CertDir: h.dir, DNSNames: []string{dnsName}, WebhookConfigurationName: vwcName, MutatingWebhookConfigurationName: mwcName,
		Client: signal, CAValidity: 10 * time.Hour, CertValidity: time.Hour, RenewBefore: 20 * time.Minute, Clock: h.clock,
		Logger: logr.New(h.logs),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- r.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	}()
	select {
	case <-signal.watching:
	case <-time.After(30 * time.Second):
		t.Fatal("the MutatingWebhookConfiguration is not watched")
	}
	// The fake clock never reaches the check interval: only the watch can
	// fill the caBundle.
	h.installMutating()
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		for _, b := range h.mutatingBundles() {
			if len(b) == 0 {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("the caBundle of the configuration created after Start stayed empty: %v", err)
	}
	if err := h.trusted(h.serving()); err != nil {
		t.Fatalf("serving certificate not trusted by every webhook: %v", err)
	}
	if lines := h.logs.shown("failed"); len(lines) != 0 {
		t.Fatalf("checks failed before the configuration was created:\n%s", strings.Join(lines, "\n"))
	}
}
