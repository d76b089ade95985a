// SPDX-License-Identifier: Apache-2.0

package controller

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt-plugins/framework/plugin-controller/servingcert"
	"github.com/kubevirt-plugins/framework/tests/framework/poll"
)

// raceClient lets a replica read the CA Secret, finding it missing, only
// once every replica has read it: all of them then create it, and all but
// one are refused with AlreadyExists by the API server.
type raceClient struct {
	client.WithWatch
	secret  types.NamespacedName
	read    sync.Once
	arrived *sync.WaitGroup
	refused *atomic.Int32 // creates of the Secret refused with AlreadyExists
}

func (c *raceClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := c.WithWatch.Get(ctx, key, obj, opts...)
	if key == c.secret {
		c.read.Do(func() {
			c.arrived.Done()
			c.arrived.Wait()
		})
	}
	return err
}

func (c *raceClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	err := c.WithWatch.Create(ctx, obj, opts...)
	if client.ObjectKeyFromObject(obj) == c.secret && apierrors.IsAlreadyExists(err) {
		c.refused.Add(1)
	}
	return err
}

// TestReplicasStartingTogetherWithNoCASecretAgreeOnOneCA: two replicas
// start at the same moment on a cluster with no CA Secret, both find it
// missing and both create it. The API server keeps one; the replica it
// refuses takes that one's CA instead of failing or keeping its own, so
// there is one Secret, one CA in the caBundle, and both replicas' serving
// certificates are signed by it.
func TestReplicasStartingTogetherWithNoCASecretAgreeOnOneCA(t *testing.T) {
	ctx := t.Context()
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controllerNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	secret := types.NamespacedName{Namespace: controllerNamespace, Name: "servingcert-race-ca"}
	none := admissionregistrationv1.SideEffectClassNone
	ignore := admissionregistrationv1.Ignore
	url := "https://127.0.0.1:1/never-called"
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "servingcert-race"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "race.servingcert.test.kubevirt.io",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url},
			SideEffects:             &none,
			FailurePolicy:           &ignore,
			AdmissionReviewVersions: []string{"v1"},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{"servingcert.test.invalid"}, APIVersions: []string{"v1"}, Resources: []string{"nothing"},
				},
			}},
		}},
	}
	if err := admin.Create(ctx, vwc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx) // the test's context is done when cleanups run
		_ = admin.Delete(ctx, vwc)
		_ = admin.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secret.Namespace, Name: secret.Name}})
	})

	base, err := client.NewWithWatch(server.Config, client.Options{Scheme: server.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	const replicas = 2
	var arrived sync.WaitGroup
	arrived.Add(replicas)
	var refused atomic.Int32
	dirs := make([]string, replicas)
	errs := make([]error, replicas)
	var started sync.WaitGroup
	for i := range replicas {
		dirs[i] = t.TempDir()
		r, err := servingcert.New(servingcert.Options{
			CertDir: dirs[i], DNSNames: []string{webhookServerName}, WebhookConfigurationName: vwc.Name,
			CASecret: &secret,
			Client:   &raceClient{WithWatch: base, secret: secret, arrived: &arrived, refused: &refused},
		})
		if err != nil {
			t.Fatal(err)
		}
		started.Go(func() {
			errs[i] = r.Ensure(ctx) // what Start does first
		})
	}
	started.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
	}
	if n := refused.Load(); n != replicas-1 {
		t.Fatalf("%d creates of the Secret were refused with AlreadyExists, want %d: the replicas did not race", n, replicas-1)
	}
	if t.Failed() {
		return
	}

	var s corev1.Secret
	if err := admin.Get(ctx, secret, &s); err != nil {
		t.Fatalf("reading the CA Secret: %v", err)
	}
	stored := parsePEMCerts(t, s.Data[servingcert.CACertFile])
	if len(stored) != 1 {
		t.Fatalf("the CA Secret holds %d certificates, want one CA", len(stored))
	}
	if err := admin.Get(ctx, client.ObjectKeyFromObject(vwc), vwc); err != nil {
		t.Fatal(err)
	}
	bundle := parsePEMCerts(t, vwc.Webhooks[0].ClientConfig.CABundle)
	if len(bundle) != 1 || !bundle[0].Equal(stored[0]) {
		t.Fatalf("the caBundle holds %d CAs, want exactly the CA of the Secret", len(bundle))
	}
	roots := x509.NewCertPool()
	roots.AddCert(bundle[0])
	for i, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, servingcert.CertFile))
		if err != nil {
			t.Fatal(err)
		}
		certs := parsePEMCerts(t, data)
		if len(certs) == 0 {
			t.Fatalf("replica %d wrote no serving certificate", i)
		}
		if _, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, DNSName: webhookServerName}); err != nil {
			t.Errorf("replica %d's serving certificate is not trusted by the caBundle: %v", i, err)
		}
	}
}

func parsePEMCerts(t *testing.T, data []byte) []*x509.Certificate {
	t.Helper()
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return out
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
}

// TestMutatingConfigurationCreatedAfterStartGetsTheCAAtOnce: a rotator
// started while its MutatingWebhookConfiguration does not exist (the
// sidecar injector is installed on its own, maybe later) reports no error;
// once the configuration is created, the watch fills its caBundle with the
// CA of the serving certificate, long before the next periodic check.
func TestMutatingConfigurationCreatedAfterStartGetsTheCAAtOnce(t *testing.T) {
	ctx := t.Context()
	none := admissionregistrationv1.SideEffectClassNone
	ignore := admissionregistrationv1.Ignore
	url := "https://127.0.0.1:1/never-called"
	never := admissionregistrationv1.WebhookClientConfig{URL: &url}
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"servingcert.test.invalid"}, APIVersions: []string{"v1"}, Resources: []string{"nothing"}},
	}}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "servingcert-late-validating"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "validating.servingcert.test.kubevirt.io", ClientConfig: never,
			SideEffects: &none, FailurePolicy: &ignore, AdmissionReviewVersions: []string{"v1"}, Rules: rules,
		}},
	}
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "servingcert-late-mutating"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{
			{
				Name: "a.servingcert.test.kubevirt.io", ClientConfig: never,
				SideEffects: &none, FailurePolicy: &ignore, AdmissionReviewVersions: []string{"v1"}, Rules: rules,
			},
			{
				Name: "b.servingcert.test.kubevirt.io", ClientConfig: never,
				SideEffects: &none, FailurePolicy: &ignore, AdmissionReviewVersions: []string{"v1"}, Rules: rules,
			},
		},
	}
	if err := admin.Create(ctx, vwc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx) // the test's context is done when cleanups run
		_ = admin.Delete(ctx, vwc)
		_ = admin.Delete(ctx, mwc)
	})

	var logs lockedBuffer
	logger := funcr.New(func(prefix, args string) { fmt.Fprintln(&logs, prefix, args) }, funcr.Options{Verbosity: 1})
	var logged atomic.Int32
	logger = logr.New(&errorCounter{LogSink: logger.GetSink(), n: &logged})
	base, err := client.NewWithWatch(server.Config, client.Options{Scheme: server.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	c := &watchOpened{WithWatch: base, opened: make(chan struct{})}
	dir := t.TempDir()
	r, err := servingcert.New(servingcert.Options{
		CertDir: dir, DNSNames: []string{webhookServerName},
		WebhookConfigurationName: vwc.Name, MutatingWebhookConfigurationName: mwc.Name,
		Client: c, Logger: logger, // the default check interval, 5 minutes, is far beyond the deadline below
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Start(runCtx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	})

	// The first check has run: the validating configuration trusts the
	// serving certificate, and the mutating one is not missed.
	var served *x509.Certificate
	poll.Until(t, "the validating configuration trusts the serving certificate", 30*time.Second, func() error {
		data, err := os.ReadFile(filepath.Join(dir, servingcert.CertFile))
		if err != nil {
			return err
		}
		served = parsePEMCerts(t, data)[0]
		if err := admin.Get(ctx, client.ObjectKeyFromObject(vwc), vwc); err != nil {
			return err
		}
		return trustedBy(served, vwc.Webhooks[0].ClientConfig.CABundle)
	})
	select {
	case <-c.opened:
	case <-time.After(30 * time.Second):
		t.Fatal("the MutatingWebhookConfiguration is not watched")
	}
	if err := admin.Create(ctx, mwc); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	poll.Until(t, "every webhook of the mutating configuration trusts the serving certificate", 15*time.Second, func() error {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(mwc), mwc); err != nil {
			return err
		}
		for _, w := range mwc.Webhooks {
			if err := trustedBy(served, w.ClientConfig.CABundle); err != nil {
				return fmt.Errorf("webhook %s: %w", w.Name, err)
			}
		}
		return nil
	})
	t.Logf("caBundle filled %s after the configuration was created", time.Since(created).Round(time.Millisecond))
	if n := logged.Load(); n != 0 {
		t.Errorf("%d errors logged while the mutating configuration was missing; logs:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "not installed") {
		t.Errorf("the missing configuration was not reported at debug level; logs:\n%s", logs.String())
	}
}

// trustedBy: cert verifies against the CAs in bundle.
func trustedBy(cert *x509.Certificate, bundle []byte) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(bundle) {
		return fmt.Errorf("caBundle holds no certificate")
	}
	_, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: webhookServerName})
	return err
}

// errorCounter counts the errors logged through it.
type errorCounter struct {
	logr.LogSink
	n *atomic.Int32
}

func (e *errorCounter) Error(err error, msg string, kv ...any) {
	e.n.Add(1)
	e.LogSink.Error(err, msg, kv...)
}

func (e *errorCounter) WithValues(kv ...any) logr.LogSink {
	return &errorCounter{LogSink: e.LogSink.WithValues(kv...), n: e.n}
}

func (e *errorCounter) WithName(name string) logr.LogSink {
	return &errorCounter{LogSink: e.LogSink.WithName(name), n: e.n}
}

// watchOpened closes opened once a watch of MutatingWebhookConfigurations
// is open: a configuration created after that is seen by it.
type watchOpened struct {
	client.WithWatch
	once   sync.Once
	opened chan struct{}
}

func (w *watchOpened) Watch(ctx context.Context, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
	wi, err := w.WithWatch.Watch(ctx, list, opts...)
	if _, ok := list.(*admissionregistrationv1.MutatingWebhookConfigurationList); ok && err == nil {
		w.once.Do(func() { close(w.opened) })
	}
	return wi, err
}
