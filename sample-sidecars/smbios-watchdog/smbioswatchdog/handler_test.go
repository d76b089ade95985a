// SPDX-License-Identifier: Apache-2.0

package smbioswatchdog

import (
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"libvirt.org/go/libvirtxml"

	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
	"github.com/kubevirt-plugins/framework/protos/sdk"
	"github.com/kubevirt-plugins/framework/protos/sdk/sdktest"
)

const pluginName = "smbios-watchdog"

func serve(t *testing.T) hooksv1alpha1.LauncherHookServiceClient {
	t.Helper()
	conn, err := sdktest.Dial(sdktest.StartLauncher(t, pluginName, New(Options{})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return hooksv1alpha1.NewLauncherHookServiceClient(conn)
}

func guestDefinition(t *testing.T, cl hooksv1alpha1.LauncherHookServiceClient, labels map[string]string, domainXML string) (*libvirtxml.Domain, error) {
	t.Helper()
	resp, err := cl.GuestDefinition(t.Context(), &hooksv1alpha1.GuestDefinitionRequest{
		DomainXml:      []byte(domainXML),
		Vmi:            sdktest.VMIJSON("default", "vm1", labels, nil),
		SidecarContext: &hooksv1alpha1.SidecarContext{InvocationContext: string(sdk.InvocationBoot)},
	})
	if err != nil {
		return nil, err
	}
	dom := &libvirtxml.Domain{}
	if err := dom.Unmarshal(string(resp.GetDomainXml())); err != nil {
		t.Fatalf("response does not parse: %v", err)
	}
	return dom, nil
}

func systemEntry(dom *libvirtxml.Domain, name string) (string, bool) {
	for _, si := range dom.SysInfo {
		if si.SMBIOS == nil || si.SMBIOS.System == nil {
			continue
		}
		for _, e := range si.SMBIOS.System.Entry {
			if e.Name == name {
				return e.Value, true
			}
		}
	}
	return "", false
}

func TestSMBIOSAndWatchdogFromLabels(t *testing.T) {
	cl := serve(t)
	cases := []struct {
		name         string
		labels       map[string]string
		wantEntries  map[string]string
		wantWatchdog string
	}{
		{
			name:        "smbios entries only",
			labels:      map[string]string{"smbios.example.com/manufacturer": "Example", "smbios.example.com/product": "Edge-1"},
			wantEntries: map[string]string{"manufacturer": "Example", "product": "Edge-1"},
		},
		{
			name:         "watchdog only",
			labels:       map[string]string{"watchdog.example.com/action": "poweroff"},
			wantWatchdog: "poweroff",
		},
		{
			name:         "both",
			labels:       map[string]string{"smbios.example.com/serial": "SN123", "watchdog.example.com/action": "reset"},
			wantEntries:  map[string]string{"serial": "SN123"},
			wantWatchdog: "reset",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dom, err := guestDefinition(t, cl, tc.labels, sdktest.MinimalDomainXML)
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range tc.wantEntries {
				if got, ok := systemEntry(dom, name); !ok || got != want {
					t.Errorf("system entry %s = %q (present %v), want %q", name, got, ok, want)
				}
			}
			if len(tc.wantEntries) > 0 && (dom.OS.SMBios == nil || dom.OS.SMBios.Mode != "sysinfo") {
				t.Errorf("os smbios = %+v, want mode sysinfo", dom.OS.SMBios)
			}
			var got []libvirtxml.DomainWatchdog
			if dom.Devices != nil {
				got = dom.Devices.Watchdogs
			}
			switch {
			case tc.wantWatchdog == "" && len(got) != 0:
				t.Errorf("watchdogs = %+v, want none", got)
			case tc.wantWatchdog != "" && (len(got) != 1 || got[0].Model != WatchdogModel || got[0].Action != tc.wantWatchdog):
				t.Errorf("watchdogs = %+v, want one %s with action %s", got, WatchdogModel, tc.wantWatchdog)
			}
		})
	}
}

func TestNoLabelsLeavesDomainUnchanged(t *testing.T) {
	dom, err := guestDefinition(t, serve(t), nil, sdktest.MinimalDomainXML)
	if err != nil {
		t.Fatal(err)
	}
	want := &libvirtxml.Domain{}
	if err := want.Unmarshal(sdktest.MinimalDomainXML); err != nil {
		t.Fatal(err)
	}
	a, _ := dom.Marshal()
	b, _ := want.Marshal()
	if a != b {
		t.Fatalf("domain changed without labels:\n%s\nwant:\n%s", a, b)
	}
}

func TestInvalidLabelIsInvalidArgument(t *testing.T) {
	cl := serve(t)
	for _, labels := range []map[string]string{
		{"watchdog.example.com/action": "explode"},
		{"smbios.example.com/colour": "blue"},
	} {
		_, err := guestDefinition(t, cl, labels, sdktest.MinimalDomainXML)
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("labels %v: got %v, want InvalidArgument", labels, err)
		}
	}
}

// KubeVirt's own domain already carries an SMBIOS system block with uuid
// and serial: the labels overwrite their entries and keep the others.
func TestKeepsKubeVirtSystemEntries(t *testing.T) {
	fixture := filepath.Join("..", "..", "..", "..", "shared", "fixtures", "domain_x86_64.xml")
	xml, err := os.ReadFile(fixture)
	if os.IsNotExist(err) {
		t.Skipf("fixture %s is absent (it lives outside the repository)", fixture)
	}
	if err != nil {
		t.Fatal(err)
	}
	dom, err := guestDefinition(t, serve(t), map[string]string{"smbios.example.com/product": "Edge-1"}, string(xml))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := systemEntry(dom, "product"); got != "Edge-1" {
		t.Errorf("product = %q, want Edge-1", got)
	}
	if got, _ := systemEntry(dom, "uuid"); got != "e4686d2c-6e8d-4335-b8fd-81bee22f4814" {
		t.Errorf("uuid = %q, want KubeVirt's value kept", got)
	}
	if n := len(dom.SysInfo); n != 1 {
		t.Errorf("%d sysinfo blocks, want the existing one reused", n)
	}
}

func TestSMBIOSWatchdogPassesLauncherContract(t *testing.T) {
	socket := sdktest.StartLauncher(t, pluginName, New(Options{}))
	sdktest.RunLauncherContract(t, socket, sdktest.LauncherContract{
		Permitted: []string{sdk.HookGuestDefinition},
		VMI: sdktest.VMIJSON("default", "vm1", map[string]string{
			"smbios.example.com/manufacturer": "Example",
			"watchdog.example.com/action":     "reset",
		}, nil),
	})
}
