// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"
	"testing"
)

func TestFlagDefaultsRunTheWebhookWithSelfSignedCertificates(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	f, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !f.enableWebhook || f.certManagement != certsSelfSigned || f.leaderElect ||
		f.serviceNamespace != "kubevirt" || f.leaderElectionNamespace != "kubevirt" || f.webhookPort != 9443 {
		t.Fatalf("defaults %+v", f)
	}
}

func TestMetricsAreServedOverHTTPSWithAuthenticationByDefault(t *testing.T) {
	f, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := metricsOptions(f)
	if opts.BindAddress != ":8443" || !opts.SecureServing || opts.FilterProvider == nil {
		t.Fatalf("default metrics options %+v, want HTTPS on :8443 with the authentication and authorization filter", opts)
	}
	f, err = parseFlags([]string{"--metrics-secure=false"})
	if err != nil {
		t.Fatal(err)
	}
	if opts := metricsOptions(f); opts.SecureServing || opts.FilterProvider != nil {
		t.Fatalf("--metrics-secure=false gives %+v, want plain HTTP", opts)
	}
}

func TestPodNamespaceIsTheDefaultNamespace(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "virt-system")
	f, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.serviceNamespace != "virt-system" || f.leaderElectionNamespace != "virt-system" {
		t.Fatalf("namespaces %q/%q, want virt-system", f.serviceNamespace, f.leaderElectionNamespace)
	}
}

func TestFlagsAreParsed(t *testing.T) {
	f, err := parseFlags([]string{"--enable-webhook=false", "--leader-elect", "--webhook-cert-management=external", "--cel-cost-limit=5", "--cel-condition-cost-limit=3"})
	if err != nil {
		t.Fatal(err)
	}
	if f.enableWebhook || !f.leaderElect || f.certManagement != certsExternal || f.celCostLimit != 5 || f.celConditionCostLimit != 3 {
		t.Fatalf("parsed %+v", f)
	}
}

func TestUnknownCertificateManagementIsRefused(t *testing.T) {
	_, err := parseFlags([]string{"--webhook-cert-management=vault"})
	if err == nil || !strings.Contains(err.Error(), `"vault"`) {
		t.Fatalf("error %v, want one naming the bad value", err)
	}
}
