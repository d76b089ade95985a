// SPDX-License-Identifier: Apache-2.0

package hook

import (
	"testing"

	"libvirt.org/go/libvirtxml"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
	"github.com/kubevirt-plugins/framework/protos/sdk"
	"github.com/kubevirt-plugins/framework/protos/sdk/sdktest"
)

// pluginName must match metadata.name in plugin.yaml.
const pluginName = "template"

// TestPassesLauncherContract checks the sidecar against the contract over
// a real socket: keep it, and list the hook points your Plugin permits.
func TestPassesLauncherContract(t *testing.T) {
	socket := sdktest.StartLauncher(t, pluginName, New(Options{}))
	sdktest.RunLauncherContract(t, socket, sdktest.LauncherContract{
		Permitted: []string{sdk.HookGuestDefinition},
		VMI:       sdktest.VMIJSON("default", "vm1", map[string]string{Label: "hello"}, nil),
	})
}

// TestLabelSetsDescription shows how to test the handler's effect: call
// it over the socket and look at the returned domain.
func TestLabelSetsDescription(t *testing.T) {
	conn, err := sdktest.Dial(sdktest.StartLauncher(t, pluginName, New(Options{})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := hooksv1alpha1.NewLauncherHookServiceClient(conn).GuestDefinition(t.Context(), &hooksv1alpha1.GuestDefinitionRequest{
		DomainXml: []byte(sdktest.MinimalDomainXML),
		Vmi:       sdktest.VMIJSON("default", "vm1", map[string]string{Label: "hello"}, nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	dom := &libvirtxml.Domain{}
	if err := dom.Unmarshal(string(resp.GetDomainXml())); err != nil {
		t.Fatal(err)
	}
	if dom.Description != "template: hello" {
		t.Fatalf("description = %q", dom.Description)
	}
}
