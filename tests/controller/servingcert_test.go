// SPDX-License-Identifier: Apache-2.0

package controller

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt-plugins/framework/plugin-controller/servingcert"
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
