// SPDX-License-Identifier: Apache-2.0

package sdktest_test

import (
	"context"
	"fmt"
	"testing"

	"libvirt.org/go/libvirtxml"

	"github.com/kubevirt-plugins/framework/protos/sdk"
	"github.com/kubevirt-plugins/framework/protos/sdk/sdktest"
)

// cpuModel is a plugin's GuestDefinition handler.
type cpuModel struct{}

func (cpuModel) GuestDefinition(_ context.Context, r *sdk.GuestDefinitionRequest) (*libvirtxml.Domain, error) {
	r.Domain.CPU = &libvirtxml.DomainCPU{Mode: "host-passthrough"}
	return r.Domain, nil
}

// In a plugin's own tests: serve the handler on a real socket and check it
// against the contract. Here testing.T comes from a throwaway
// testing.RunTests call so that the example runs; in a test, use the
// test's t.
func Example() {
	test := func(t *testing.T) {
		socket := sdktest.StartLauncher(t, "cpu-model", cpuModel{})
		sdktest.RunLauncherContract(t, socket, sdktest.LauncherContract{
			Permitted: []string{sdk.HookGuestDefinition},
			VMI:       sdktest.VMIJSON("default", "vm1", map[string]string{"app": "db"}, nil),
		})
	}
	ok := testing.RunTests(func(string, string) (bool, error) { return true, nil },
		[]testing.InternalTest{{Name: "TestCPUModelContract", F: test}})
	fmt.Println("contract passed:", ok)
	// Output: contract passed: true
}

// Outside testing.T, as kvpctl conformance does: run the checks against a
// hook server's socket and look at each result.
func ExampleRunChecks() {
	test := func(t *testing.T) {
		socket := sdktest.StartLauncher(t, "cpu-model", cpuModel{})
		conn, err := sdktest.Dial(socket)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		checks := sdktest.LauncherChecks(sdktest.LauncherContract{Permitted: []string{sdk.HookGuestDefinition}})
		for _, r := range sdktest.RunChecks(t.Context(), conn, checks) {
			fmt.Println(r.Status, r.Check)
		}
	}
	testing.RunTests(func(string, string) (bool, error) { return true, nil },
		[]testing.InternalTest{{Name: "TestCPUModelChecks", F: test}})
	// Output:
	// PASS RPCs/PermittedImplemented
	// PASS RPCs/OnlyPermitted
	// PASS GuestDefinition/BothInvocationContexts
	// PASS GuestDefinition/ReturnsDomain
	// PASS GuestDefinition/KeepsDomain
	// PASS GuestDefinition/Repeatable
	// PASS GuestDefinition/Idempotent
	// PASS GuestDefinition/ContextHonoured
}
