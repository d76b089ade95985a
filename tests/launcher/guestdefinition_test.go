// SPDX-License-Identifier: Apache-2.0

package launcher_test

import (
	"strings"
	"testing"

	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
	"github.com/kubevirt-plugins/framework/tests/framework/libvirtd"
)

// Alphabetical order: a-cel-memory runs before smbios-watchdog.
const celMemoryPlugin = `
apiVersion: plugin.kubevirt.io/v1alpha1
kind: Plugin
metadata:
  name: a-cel-memory
spec:
  condition: 'vmi.Labels["tier"] == "gold"'
  launcherHooks:
  - cel:
      hookPoint: GuestDefinition
      expression: 'Domain{Title: "gold " + vmi.Name, Memory: DomainMemory{Value: 96u, Unit: "MiB"}}'
`

func TestDomainChangedByCELAndSidecarBootsWithBothChanges(t *testing.T) {
	ctx := testContext(t)
	root := shortTempDir(t, "kvp-sock-")
	startSidecar(t, sidecarBinary(t, "smbios-watchdog/cmd/smbios-watchdog"), "smbios-watchdog", root)
	p := newPipeline(t, root, plugins(t, celMemoryPlugin, samplePlugin(t, "smbios-watchdog")))
	vmi := newVMI("vm-gold", map[string]string{
		"tier":                                "gold",
		"plugins.example.com/smbios-watchdog": "true",
		"smbios.example.com/manufacturer":     "Acme",
		"smbios.example.com/serial":           "SN-0042",
		"watchdog.example.com/action":         "reset",
	})

	domain, err := p.GuestDefinition(ctx, vmi, libvirtd.DisklessDomain("vm-gold"), pipeline.Boot)
	if err != nil {
		t.Fatal(err)
	}
	node := libvirtd.StartT(t, libvirtd.Options{})
	conn := node.ConnectT(t)
	live := bootRunning(ctx, t, node, conn, domain)
	// The CEL hook's changes.
	if live.Title != "gold vm-gold" {
		t.Errorf("title = %q, want the CEL hook's %q", live.Title, "gold vm-gold")
	}
	if live.Memory == nil || live.Memory.Value != 96*1024 || live.Memory.Unit != "KiB" {
		t.Errorf("memory = %+v, want the CEL hook's 96 MiB (98304 KiB)", live.Memory)
	}
	// The sidecar's changes.
	entries := map[string]string{}
	for _, si := range live.SysInfo {
		if si.SMBIOS != nil && si.SMBIOS.System != nil {
			for _, e := range si.SMBIOS.System.Entry {
				entries[e.Name] = e.Value
			}
		}
	}
	if entries["manufacturer"] != "Acme" || entries["serial"] != "SN-0042" {
		t.Errorf("SMBIOS system entries = %v, want the sidecar's manufacturer Acme and serial SN-0042", entries)
	}
	if live.OS == nil || live.OS.SMBios == nil || live.OS.SMBios.Mode != "sysinfo" {
		t.Errorf("os/smbios = %+v, want mode sysinfo", live.OS)
	}
	if w := live.Devices.Watchdogs; len(w) != 1 || w[0].Model != "i6300esb" || w[0].Action != "reset" {
		t.Errorf("watchdogs = %+v, want the sidecar's i6300esb with action reset", w)
	}
	// QEMU really got the sidecar's SMBIOS data and watchdog.
	cmdline, err := node.Exec(ctx, "sh", "-c", "tr '\\0' ' ' </proc/$(cat /run/libvirt/qemu/vm-gold.pid)/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"manufacturer=Acme", "serial=SN-0042", "i6300esb", "-watchdog-action reset", "-m 96 "} {
		if !strings.Contains(cmdline, want) {
			t.Errorf("QEMU command line lacks %q:\n%s", want, cmdline)
		}
	}
}
