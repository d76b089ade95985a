// SPDX-License-Identifier: Apache-2.0

package sdk_test

import (
	"testing"

	"github.com/kubevirt-plugins/framework/protos/sdk"
)

// The SDK accepts exactly the plugin names Kubernetes accepts for a
// Plugin (a DNS-1123 subdomain), so that a sidecar never serves under a
// name no Plugin can have.
func TestLauncherSocketPathAcceptsOnlyNamesKubernetesAccepts(t *testing.T) {
	for _, name := range []string{"a", "demo", "a.b", "a-b.c-d", "0p"} {
		if _, err := sdk.LauncherSocketPath("/run/p", name, "hook.sock"); err != nil {
			t.Errorf("%q refused: %v", name, err)
		}
	}
	for _, name := range []string{"a.-b", "a-.b", "a..b", "-a", "a-", ".a", "A", "a_b", ""} {
		if _, err := sdk.LauncherSocketPath("/run/p", name, "hook.sock"); err == nil {
			t.Errorf("%q accepted", name)
		}
	}
}
