// SPDX-License-Identifier: Apache-2.0

package guest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/kubevirt-plugins/framework/launcher-runtime/domainrun"
	"github.com/kubevirt-plugins/framework/tests/framework/guest"
	"github.com/kubevirt-plugins/framework/tests/framework/libvirtd"
	"github.com/kubevirt-plugins/framework/tests/framework/poll"
)

// Paths inside the libvirtd containers: the guest's files, read-only, and
// a directory of the node's own for the console log and the ISO.
const (
	guestDir   = "/guest"
	nodeDir    = "/node"
	consoleLog = nodeDir + "/console.log"
	isoPath    = guestDir + "/cidata.iso"
)

// bootTimeout bounds a boot under TCG on a loaded 2-core machine (about 8 s
// when the machine is busy).
const bootTimeout = 3 * time.Minute

// node is a libvirtd container with the guest's files mounted.
type node struct {
	*libvirtd.Node
	conn *libvirt.Connect
	// console is the host path of the console log.
	console string
}

// shared is a host directory holding the guest's kernel and initramfs and
// whatever ISO the test writes, mounted at guestDir on every node.
func shared(t *testing.T) string {
	t.Helper()
	src := guest.Dir(t)
	dir := t.TempDir()
	for _, f := range []string{guest.Kernel, guest.Initrd} {
		data, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func startNode(t *testing.T, files string, opts libvirtd.Options) *node {
	t.Helper()
	own := t.TempDir()
	opts.Binds = append(opts.Binds, files+":"+guestDir+":ro", own+":"+nodeDir)
	n := libvirtd.StartT(t, opts)
	return &node{Node: n, conn: n.ConnectT(t), console: filepath.Join(own, "console.log")}
}

// read returns what the guest printed on n so far.
func (n *node) read(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(n.console)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(data)
}

// waitFor polls n's console until the report satisfies cond.
func (n *node) waitFor(t *testing.T, what string, cond func(guest.Report) error) guest.Report {
	t.Helper()
	var r guest.Report
	poll.Until(t, what, bootTimeout, func() error {
		r = guest.Parse(n.read(t))
		return cond(r)
	})
	return r
}

func booted(r guest.Report) error {
	if !r.Ready || len(r.Ticks) == 0 {
		return fmt.Errorf("not through its report yet (%d lines)", len(r.Lines))
	}
	return nil
}

// writeNoCloudISO writes a NoCloud ISO (volume cidata) into dir, with
// genisoimage as the launcher tests do.
func writeNoCloudISO(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	src := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command("genisoimage", "-quiet", "-output", filepath.Join(dir, filepath.Base(isoPath)),
		"-volid", "cidata", "-joliet", "-rock", src).CombinedOutput()
	if err != nil {
		t.Fatalf("genisoimage (make setup installs it): %v\n%s", err, out)
	}
}

// tunedDomain is what the samples make of a diskless VM: smbios-watchdog's
// SMBIOS system strings and i6300esb watchdog, the CEL plugin's two vCPUs
// (two cores of one socket), cloudinit-network's NoCloud disk.
func tunedDomain(name string) *libvirtxml.Domain {
	d := libvirtd.DisklessDomain(name)
	d.VCPU = &libvirtxml.DomainVCPU{Value: 2}
	d.CPU = &libvirtxml.DomainCPU{Topology: &libvirtxml.DomainCPUTopology{Sockets: 1, Cores: 2, Threads: 1}}
	d.SysInfo = []libvirtxml.DomainSysInfo{{SMBIOS: &libvirtxml.DomainSysInfoSMBIOS{
		System: &libvirtxml.DomainSysInfoSystem{Entry: []libvirtxml.DomainSysInfoEntry{
			{Name: "manufacturer", Value: "Example Corp"},
			{Name: "product", Value: "Tuned VM"},
			{Name: "family", Value: "KubeVirt"},
		}},
	}}}
	d.OS.SMBios = &libvirtxml.DomainSMBios{Mode: "sysinfo"}
	d.Devices.Watchdogs = []libvirtxml.DomainWatchdog{{Model: "i6300esb", Action: "poweroff"}}
	d.Devices.Disks = []libvirtxml.DomainDisk{{
		Device:   "cdrom",
		Driver:   &libvirtxml.DomainDiskDriver{Name: "qemu", Type: "raw"},
		Source:   &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: isoPath}},
		Target:   &libvirtxml.DomainDiskTarget{Dev: "hda", Bus: "ide"},
		ReadOnly: &libvirtxml.DomainDiskReadOnly{},
	}}
	guest.Boot(d, guestDir, consoleLog)
	return d
}

const networkConfig = `version: 2
ethernets:
  secondary:
    match:
      macaddress: "02:00:00:0a:0b:0c"
    addresses: [192.168.100.10/24]
`

func start(t *testing.T, n *node, d *libvirtxml.Domain) *libvirt.Domain {
	t.Helper()
	dom, err := domainrun.DefineAndStart(t.Context(), n.conn, d)
	if err != nil {
		t.Fatalf("%v\n%s", err, n.Logs(t.Context()))
	}
	t.Cleanup(func() { _ = dom.Free() })
	return dom
}

// TestGuestSeesWhatTheDomainGivesIt: the guest reads back the SMBIOS
// strings, the i6300esb watchdog (with its driver), the vCPU count and the
// NoCloud disk's network configuration the domain gives it.
func TestGuestSeesWhatTheDomainGivesIt(t *testing.T) {
	files := shared(t)
	writeNoCloudISO(t, files, map[string]string{"meta-data": "instance-id: vm-a\n", "network-config": networkConfig})
	n := startNode(t, files, libvirtd.Options{})
	start(t, n, tunedDomain("sees-its-domain"))
	r := n.waitFor(t, "the guest's report", booted)
	t.Logf("the guest printed:\n%s", strings.Join(r.Lines[:min(len(r.Lines), 30)], "\n"))

	if r.DMI["sys_vendor"] != "Example Corp" || r.DMI["product_name"] != "Tuned VM" || r.DMI["product_family"] != "KubeVirt" {
		t.Errorf("SMBIOS read in the guest: %v", r.DMI)
	}
	if !r.Watchdog || r.WatchdogIdentity != "i6300ESB timer" {
		t.Errorf("watchdog in the guest: present %v, identity %q; want the i6300ESB timer", r.Watchdog, r.WatchdogIdentity)
	}
	if r.VCPUs != 2 {
		t.Errorf("vCPUs in the guest: %d, want 2", r.VCPUs)
	}
	if !r.CIData || !slices.Contains(r.CIDataFiles["network-config"], "    addresses: [192.168.100.10/24]") {
		t.Errorf("NoCloud disk in the guest: mounted %v, network-config %q", r.CIData, r.CIDataFiles["network-config"])
	}
	if len(r.Errors) > 0 {
		t.Errorf("the guest complained: %q", r.Errors)
	}
}

// TestGuestReportsWhatItDoesNotGet: the same guest in the plain domain (no
// plugin's change) reports no watchdog, QEMU's own SMBIOS strings, one vCPU
// and no NoCloud disk, so each check of the test above fails when the
// change it looks for is missing. Then it is stopped as KubeVirt stops a
// VM: libvirt's graceful shutdown presses the ACPI power button, and the
// guest says so and powers off at once, well inside a grace period
// (KubeVirt's default is 30 s) rather than being killed at its end.
func TestGuestReportsWhatItDoesNotGet(t *testing.T) {
	n := startNode(t, shared(t), libvirtd.Options{})
	d := libvirtd.DisklessDomain("plain")
	d.Features = &libvirtxml.DomainFeatureList{ACPI: &libvirtxml.DomainFeature{}}
	guest.Boot(d, guestDir, consoleLog)
	dom := start(t, n, d)
	r := n.waitFor(t, "the guest's report", booted)
	if r.Watchdog || r.DMI["sys_vendor"] == "Example Corp" || r.VCPUs != 1 || r.CIData {
		t.Fatalf("a plain domain's guest reports watchdog %v, SMBIOS %v, %d vCPUs, NoCloud disk %v",
			r.Watchdog, r.DMI, r.VCPUs, r.CIData)
	}

	pressed := time.Now()
	if err := dom.ShutdownFlags(libvirt.DOMAIN_SHUTDOWN_ACPI_POWER_BTN); err != nil {
		t.Fatalf("virDomainShutdownFlags(ACPI power button): %v", err)
	}
	poll.Until(t, "the domain to shut off after its power button was pressed", 20*time.Second, func() error {
		state, _, err := dom.GetState()
		if err != nil {
			return err
		}
		if state != libvirt.DOMAIN_SHUTOFF {
			return fmt.Errorf("domain state %d", state)
		}
		return nil
	})
	t.Logf("shut off %s after the power button was pressed", time.Since(pressed).Round(100*time.Millisecond))
	if r := guest.Parse(n.read(t)); !r.PowerButton {
		t.Errorf("the guest did not report the power button: last lines %q", r.Lines[max(0, len(r.Lines)-3):])
	}
}

// TestLiveMigrationKeepsTheGuestRunning: a guest migrated live between two
// libvirtd containers goes on on the target with the same boot id, its
// counter continuing where it stopped on the source (no reboot), with a gap
// no longer than the migration took, and its watchdog still there.
func TestLiveMigrationKeepsTheGuestRunning(t *testing.T) {
	files := shared(t)
	writeNoCloudISO(t, files, map[string]string{"meta-data": "instance-id: vm-m\n", "network-config": networkConfig})
	nw := libvirtd.NewNetworkT(t)
	source := startNode(t, files, libvirtd.Options{Network: nw, Alias: "source"})
	target := startNode(t, files, libvirtd.Options{Network: nw, Alias: "target"})
	dom := start(t, source, tunedDomain("migrates-live"))
	before := source.waitFor(t, "the guest's report on the source", func(r guest.Report) error {
		if err := booted(r); err != nil {
			return err
		}
		if len(r.Ticks) < 3 {
			return fmt.Errorf("%d ticks", len(r.Ticks))
		}
		return nil
	})

	began := time.Now()
	flags := uint64(libvirt.MIGRATE_LIVE | libvirt.MIGRATE_PEER2PEER)
	if err := domainrun.Migrate(t.Context(), dom, target.PeerURI(), flags, nil); err != nil {
		t.Fatalf("%v\nsource log:\n%s", err, source.Logs(t.Context()))
	}
	took := time.Since(began)
	last, _ := guest.Parse(source.read(t)).LastTick()

	after := target.waitFor(t, "ticks on the target", func(r guest.Report) error {
		if len(r.Ticks) < 3 {
			return fmt.Errorf("%d ticks on the target", len(r.Ticks))
		}
		return nil
	})
	first := after.Ticks[0]
	if info, err := target.Virsh(t.Context(), "domjobinfo", "--completed", "migrates-live"); err == nil {
		t.Logf("libvirt on the target, the completed migration:\n%s", info)
	}
	t.Logf("migration took %s; last tick on the source %+v, first on the target %+v", took, last, first)
	if first.BootID != before.BootID {
		t.Fatalf("boot id on the target %q, on the source %q: the guest rebooted", first.BootID, before.BootID)
	}
	if after.Ready {
		t.Fatal("the guest printed its boot report again on the target: it rebooted")
	}
	if first.N != last.N+1 && first.N != last.N {
		t.Fatalf("counter on the target starts at %d, the source's last was %d", first.N, last.N)
	}
	if !first.Watchdog {
		t.Fatal("the watchdog is gone in the guest after the migration")
	}
	if gap := first.Uptime - last.Uptime; gap > took.Seconds()+2 {
		t.Fatalf("guest uptime gap %.2f s across a migration of %s", gap, took)
	}
	state, _, err := dom.GetState()
	if err != nil || state != libvirt.DOMAIN_SHUTOFF {
		t.Fatalf("source domain after the migration: state %d, %v", state, err)
	}
}
