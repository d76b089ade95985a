// SPDX-License-Identifier: Apache-2.0

package cluster

import "testing"

// TestWebhookUnreachable: kubectl is tried again only when the API server
// could not reach a webhook, never on a webhook's own answer.
func TestWebhookUnreachable(t *testing.T) {
	for _, c := range []struct {
		name, stderr string
		want         bool
	}{
		{"connection refused", `Error from server (InternalError): error when creating "STDIN": Internal error occurred: failed calling webhook "virtualmachine-validator.kubevirt.io": failed to call webhook: Post "https://virt-api.kubevirt.svc:443/virtualmachines-validate?timeout=10s": dial tcp 10.96.12.7:443: connect: connection refused`, true},
		{"no endpoints", `Error from server (InternalError): Internal error occurred: failed calling webhook "plugins.plugin.kubevirt.io": failed to call webhook: Post "https://plugin-controller-webhook.kubevirt-plugins.svc:443/validate?timeout=10s": no endpoints available for service "plugin-controller-webhook"`, true},
		{"timeout", `Error from server (InternalError): Internal error occurred: failed calling webhook "virtualmachines-mutator.kubevirt.io": failed to call webhook: Post "https://virt-api.kubevirt.svc:443/virtualmachines-mutate?timeout=10s": context deadline exceeded`, true},
		{"denied", `Error from server (Forbidden): error when creating "STDIN": admission webhook "plugins.plugin.kubevirt.io" denied the request: spec.launcherHooks[0].timeout: Invalid value: "0s": must be positive`, false},
		{"refused without a webhook", `The connection to the server 127.0.0.1:6443 was refused - did you specify the right host or port?`, false},
		{"not found", `Error from server (NotFound): customresourcedefinitions.apiextensions.k8s.io "plugins.plugin.kubevirt.io" not found`, false},
	} {
		if got := webhookUnreachable(c.stderr); got != c.want {
			t.Errorf("%s: webhookUnreachable = %v, want %v", c.name, got, c.want)
		}
	}
}
