// SPDX-License-Identifier: Apache-2.0

package servingcert

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// keyPair is a certificate with its private key, parsed and PEM-encoded.
type keyPair struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
	keyPEM  []byte
}

// backdate lets certificates verify on hosts whose clock is slightly behind.
const backdate = time.Minute

func newSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

// newCA creates a self-signed CA certificate valid from now for validity.
func newCA(commonName string, now time.Time, validity time.Duration) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	return sign(tmpl, tmpl, key, key)
}

// newServing creates a serving certificate for dnsNames signed by ca. It
// never outlives the CA.
func newServing(ca *keyPair, dnsNames []string, now time.Time, validity time.Duration) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating serving key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(validity)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: dnsNames[0]},
		DNSNames:     dnsNames,
		NotBefore:    now.Add(-backdate),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	return sign(tmpl, ca.cert, key, ca.key)
}

func sign(tmpl, parent *x509.Certificate, key crypto.Signer, parentKey crypto.Signer) (*keyPair, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	if err != nil {
		return nil, fmt.Errorf("signing certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &keyPair{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// parseKeyPair reads a PEM certificate and key that belong together.
func parseKeyPair(certPEM, keyPEM []byte) (*keyPair, error) {
	tc, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	signer, ok := tc.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, errors.New("private key cannot sign")
	}
	cert, err := x509.ParseCertificate(tc.Certificate[0])
	if err != nil {
		return nil, err
	}
	return &keyPair{cert: cert, key: signer, certPEM: certPEM, keyPEM: keyPEM}, nil
}

// parseBundle returns the certificates of a PEM bundle, skipping blocks
// that are not certificates or do not parse.
func parseBundle(bundle []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, bundle = pem.Decode(bundle)
		if block == nil {
			return out
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if c, err := x509.ParseCertificate(block.Bytes); err == nil {
			out = append(out, c)
		}
	}
}

// mergeBundle puts ca first, then the still-valid certificates of
// previous (other than ca), keeping at most maxCAs in all.
func mergeBundle(ca *x509.Certificate, previous []byte, now time.Time, maxCAs int) []byte {
	var buf bytes.Buffer
	_ = pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})
	n := 1
	for _, c := range parseBundle(previous) {
		if n >= maxCAs {
			break
		}
		if c.Equal(ca) || !now.Before(c.NotAfter) {
			continue
		}
		_ = pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
		n++
	}
	return buf.Bytes()
}
