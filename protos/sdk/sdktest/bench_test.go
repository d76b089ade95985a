// SPDX-License-Identifier: Apache-2.0

package sdktest_test

import (
	"testing"

	"github.com/kubevirt-plugins/framework/protos/sdk"
	"github.com/kubevirt-plugins/framework/protos/sdk/sdktest"
)

// BenchmarkGuestDefinitionChecks measures one run of every check that
// applies to a GuestDefinition sidecar (about 20 calls on KubeVirt's
// 188-line domain): the cost of `kvpctl conformance` for such a sidecar.
// PreBoot checks are not measured: they wait LauncherContract.Settle (2 s
// by default) twice by design.
func BenchmarkGuestDefinitionChecks(b *testing.B) {
	socket := sdktest.StartLauncher(b, "bench", wellBehaved{})
	conn, err := sdktest.Dial(socket)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	c := sdktest.LauncherContract{Permitted: []string{sdk.HookGuestDefinition}}
	b.ReportAllocs()
	for b.Loop() {
		for _, r := range sdktest.RunChecks(b.Context(), conn, sdktest.LauncherChecks(c)) {
			if r.Status == sdktest.Fail {
				b.Fatal(r)
			}
		}
	}
}
