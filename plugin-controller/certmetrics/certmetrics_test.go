// SPDX-License-Identifier: Apache-2.0

package certmetrics_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kubevirt-plugins/framework/plugin-controller/certmetrics"
)

// writeCert writes a self-signed certificate valid until notAfter to path,
// after a private key block, as a tls.crt with its chain may come.
func writeCert(t *testing.T, path string, notAfter time.Time) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "plugin-controller-webhook.kubevirt.svc"},
		NotBefore: notAfter.Add(-24 * time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "EC PARAMETERS", Bytes: []byte{6, 8, 42, 134, 72, 206, 61, 3, 1, 7}})
	data = append(data, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func exposition(notAfter time.Time) string {
	return fmt.Sprintf(`# HELP %[1]s When the webhook serving certificate this replica serves (tls.crt in --webhook-cert-dir) expires, in seconds since the Unix epoch; read at each scrape.
# TYPE %[1]s gauge
%[1]s %[2]d
`, certmetrics.MetricExpiration, notAfter.Unix())
}

// The gauge is the certificate's NotAfter, read again at each scrape: a
// renewed certificate shows at the next one.
func TestTheGaugeIsTheServedCertificatesNotAfterReadAtEachScrape(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tls.crt")
	first := time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC)
	writeCert(t, path, first)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(certmetrics.New(path))
	if err := testutil.GatherAndCompare(reg, strings.NewReader(exposition(first))); err != nil {
		t.Fatal(err)
	}
	renewed := first.Add(90 * 24 * time.Hour)
	writeCert(t, path, renewed)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(exposition(renewed))); err != nil {
		t.Fatalf("after the renewal: %v", err)
	}
}

// A file that is missing, or holds no certificate, gives no sample, and
// the scrape of the replica's other series goes on.
func TestAnUnreadableCertificateGivesNoSample(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.crt")
	if err := os.WriteFile(garbage, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(dir, "broken.crt")
	if err := os.WriteFile(broken, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1, 2, 3}}), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, path, want string }{
		{"missing", filepath.Join(dir, "tls.crt"), "no such file"},
		{"not PEM", garbage, "garbage.crt: no PEM CERTIFICATE block"},
		{"not a certificate", broken, "broken.crt: x509"},
	} {
		t.Run(c.name, func(t *testing.T) {
			col := certmetrics.New(c.path)
			if _, err := col.Certificate(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Certificate() error %v, want %q", err, c.want)
			}
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(col, prometheus.NewGauge(prometheus.GaugeOpts{Name: "other"}))
			n, err := testutil.GatherAndCount(reg)
			if err != nil || n != 1 {
				t.Errorf("gathered %d series (%v), want only the other one", n, err)
			}
		})
	}
}
