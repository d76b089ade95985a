// SPDX-License-Identifier: Apache-2.0

package certmetrics

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"

	"github.com/prometheus/client_golang/prometheus"
)

// MetricExpiration is the name of the gauge.
const MetricExpiration = "kubevirt_plugins_plugin_controller_webhook_certificate_expiration_timestamp_seconds"

// Collector reads a serving certificate's expiry at each scrape.
type Collector struct {
	certFile string
	desc     *prometheus.Desc
}

// New returns the collector of the certificate in certFile (PEM, the
// first CERTIFICATE block counts).
func New(certFile string) *Collector {
	return &Collector{
		certFile: certFile,
		desc: prometheus.NewDesc(MetricExpiration,
			"When the webhook serving certificate this replica serves (tls.crt in --webhook-cert-dir) expires, in seconds since the Unix epoch; read at each scrape.",
			nil, nil),
	}
}

func (c *Collector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	cert, err := c.Certificate()
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(cert.NotAfter.Unix()))
}

// Certificate reads and parses the certificate, with an error naming the
// file and the cause.
func (c *Collector) Certificate() (*x509.Certificate, error) {
	data, err := os.ReadFile(c.certFile)
	if err != nil {
		return nil, err
	}
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, fmt.Errorf("%s: %w", c.certFile, errNoCertificate)
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.certFile, err)
		}
		return cert, nil
	}
}

var errNoCertificate = errors.New("no PEM CERTIFICATE block")
