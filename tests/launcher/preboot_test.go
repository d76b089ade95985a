// SPDX-License-Identifier: Apache-2.0

package launcher_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/kubevirt-plugins/framework/launcher-runtime/domainrun"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
	"github.com/kubevirt-plugins/framework/tests/framework/libvirtd"
)

const (
	userData          = "#cloud-config\nhostname: vm-cidata\n"
	metaData          = "instance-id: vm-cidata\nlocal-hostname: vm-cidata\n"
	baseNetworkConfig = "version: 2\nethernets:\n  default:\n    match:\n      macaddress: \"02:00:00:00:00:01\"\n    dhcp4: true\n"
	secondaryMAC      = "02:00:00:00:00:11"
	// The Multus network status of the launcher Pod, as the sample reads it
	// from the VMI annotation when no file or environment gives one.
	networkStatus = `[{"name":"kindnet","interface":"eth0","ips":["10.244.0.7"],"mac":"0a:58:0a:f4:00:07","default":true},` +
		`{"name":"default/secondary","interface":"net1","ips":["192.168.50.12"],"mac":"` + secondaryMAC + `","dns":{}}]`
)

// makeNoCloudISO writes a NoCloud cloud-init ISO with genisoimage, the way
// a launcher's cloud-init ISO looks: volume label cidata, user-data,
// meta-data and network-config at the root.
func makeNoCloudISO(t *testing.T, path string) {
	t.Helper()
	src := t.TempDir()
	for name, content := range map[string]string{"user-data": userData, "meta-data": metaData, "network-config": baseNetworkConfig} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command("genisoimage", "-quiet", "-output", path, "-volid", "cidata", "-joliet", "-rock",
		filepath.Join(src, "user-data"), filepath.Join(src, "meta-data"), filepath.Join(src, "network-config")).CombinedOutput()
	if err != nil {
		t.Fatalf("genisoimage (make setup installs it): %v\n%s", err, out)
	}
}

// isoFile reads one file of an ISO with isoinfo, whatever naming the
// writer used: Rock Ridge or Joliet names, or plain ISO 9660 names with a
// ";1" version (what the sample's writer produces).
func isoFile(t *testing.T, iso, name string) string {
	t.Helper()
	for _, args := range [][]string{{"-R", "-x", "/" + name}, {"-J", "-x", "/" + name}, {"-x", "/" + name + ";1"}} {
		out, err := exec.Command("isoinfo", append([]string{"-i", iso}, args...)...).Output()
		if err == nil && len(out) > 0 {
			return string(out)
		}
	}
	listing, _ := exec.Command("isoinfo", "-i", iso, "-l").CombinedOutput()
	t.Fatalf("no %s in %s:\n%s", name, iso, listing)
	return ""
}

func isoLabel(t *testing.T, iso string) string {
	t.Helper()
	out, err := exec.Command("isoinfo", "-d", "-i", iso).Output()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "Volume id:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no volume id in isoinfo -d output:\n%s", out)
	return ""
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// multusVMI is a VMI selected by the cloudinit-network sample, with a pod
// network and a Multus secondary network whose status the annotation gives.
func multusVMI(name string) *kubevirtv1.VirtualMachineInstance {
	vmi := newVMI(name, map[string]string{"plugins.example.com/cloudinit-network": "true"})
	vmi.Annotations = map[string]string{"k8s.v1.cni.cncf.io/network-status": networkStatus}
	vmi.Spec.Networks = []kubevirtv1.Network{
		{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}},
		{Name: "secondary", NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: "secondary"}}},
	}
	vmi.Spec.Domain.Devices.Interfaces = []kubevirtv1.Interface{
		{Name: "default", MacAddress: "02:00:00:00:00:01"},
		{Name: "secondary", MacAddress: secondaryMAC},
	}
	return vmi
}

// cdrom is the read-only IDE CD-ROM a launcher attaches its cloud-init ISO as.
func cdrom(iso string) libvirtxml.DomainDisk {
	return libvirtxml.DomainDisk{
		Device:   "cdrom",
		Driver:   &libvirtxml.DomainDiskDriver{Name: "qemu", Type: "raw"},
		Source:   &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: iso}},
		Target:   &libvirtxml.DomainDiskTarget{Dev: "hdc", Bus: "ide"},
		ReadOnly: &libvirtxml.DomainDiskReadOnly{},
	}
}

func TestPreBootSidecarRewritesCloudInitISOBeforeTheDomainStarts(t *testing.T) {
	ctx := testContext(t)
	// The ISO directory is bind-mounted into the libvirtd container at the
	// same path, as the ephemeral disks volume is shared by the launcher's
	// containers: QEMU opens the very file the sidecar replaced.
	dir := shortTempDir(t, "kvp-iso-")
	iso := filepath.Join(dir, "noCloud.iso")
	makeNoCloudISO(t, iso)
	before := inode(t, iso)

	root := shortTempDir(t, "kvp-sock-")
	startSidecar(t, sidecarBinary(t, "cloudinit-network/cmd/cloudinit-network"), "cloudinit-network", root)
	p := newPipeline(t, root, plugins(t, samplePlugin(t, "cloudinit-network")))

	vmi := multusVMI("vm-cidata")
	if err := p.PreBoot(ctx, vmi, pipeline.Artifacts{CloudInitISO: iso, EphemeralDiskDir: dir}); err != nil {
		t.Fatal(err)
	}

	// Replaced, not edited in place, and still a NoCloud ISO.
	if after := inode(t, iso); after == before {
		t.Fatalf("%s has the same inode %d after PreBoot: not replaced atomically", iso, after)
	}
	if label := isoLabel(t, iso); !strings.EqualFold(label, "cidata") {
		t.Fatalf("volume label after PreBoot = %q, want cidata", label)
	}
	if got := isoFile(t, iso, "user-data"); got != userData {
		t.Fatalf("user-data after PreBoot = %q, want it unchanged", got)
	}
	netcfg := isoFile(t, iso, "network-config")
	for _, want := range []string{"secondary", secondaryMAC, "192.168.50.12/24", "default", "dhcp4: true"} {
		if !strings.Contains(netcfg, want) {
			t.Fatalf("network-config after PreBoot lacks %q:\n%s", want, netcfg)
		}
	}
	rewritten := fileSHA256(t, iso)

	node := libvirtd.StartT(t, libvirtd.Options{Binds: []string{dir + ":" + dir}})
	conn := node.ConnectT(t)
	domain := libvirtd.DisklessDomain("vm-cidata")
	domain.Devices.Disks = []libvirtxml.DomainDisk{cdrom(iso)}
	live := bootRunning(ctx, t, node, conn, domain)
	if d := live.Devices.Disks; len(d) != 1 || d[0].Device != "cdrom" || d[0].Source == nil || d[0].Source.File == nil || d[0].Source.File.File != iso {
		t.Fatalf("disks of the running domain = %+v, want the cdrom %s", d, iso)
	}
	// QEMU holds the rewritten file open: the descriptor it has for the
	// path is not a deleted earlier version, and its bytes are the ones
	// the sidecar wrote.
	script := `pid=$(cat /run/libvirt/qemu/vm-cidata.pid)
for f in /proc/$pid/fd/*; do
  if [ "$(readlink "$f")" = "$ISO" ]; then sha256sum <"$f" | cut -d' ' -f1; fi
done`
	out, err := node.Exec(ctx, "env", "ISO="+iso, "sh", "-c", script)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(out); len(got) == 0 || got[0] != rewritten {
		t.Fatalf("QEMU's open descriptors of %s hash to %q, want the rewritten ISO %s", iso, got, rewritten)
	}
}

// The host may run PreBoot again after a start failed. The cloudinit-network
// sample then finds the ISO it rewrote on the first run: the second run must
// leave the same content (one entry for the secondary network, not two),
// and the domain that finally starts uses it.
func TestPreBootRerunAfterAFailedStartLeavesTheSameArtifacts(t *testing.T) {
	ctx := testContext(t)
	dir := shortTempDir(t, "kvp-iso-")
	iso := filepath.Join(dir, "noCloud.iso")
	makeNoCloudISO(t, iso)

	root := shortTempDir(t, "kvp-sock-")
	startSidecar(t, sidecarBinary(t, "cloudinit-network/cmd/cloudinit-network"), "cloudinit-network", root)
	p := newPipeline(t, root, plugins(t, samplePlugin(t, "cloudinit-network")))
	vmi := multusVMI("vm-rerun")
	artifacts := pipeline.Artifacts{CloudInitISO: iso, EphemeralDiskDir: dir}

	node := libvirtd.StartT(t, libvirtd.Options{Binds: []string{dir + ":" + dir}})
	conn := node.ConnectT(t)
	// A data disk whose volume is not there yet makes the first start fail,
	// as a launcher's start fails when a volume is not ready.
	data := filepath.Join(dir, "data.raw")
	domain := libvirtd.DisklessDomain("vm-rerun")
	domain.UUID = "4d8c2b5e-8d0f-4a57-9a43-2b1f5a0c7e11" // the retry redefines the same domain
	domain.Devices.Disks = []libvirtxml.DomainDisk{cdrom(iso), {
		Device: "disk",
		Driver: &libvirtxml.DomainDiskDriver{Name: "qemu", Type: "raw"},
		Source: &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: data}},
		Target: &libvirtxml.DomainDiskTarget{Dev: "vda", Bus: "virtio"},
	}}

	first, err := p.Boot(ctx, vmi, domain, artifacts)
	if err != nil {
		t.Fatal(err)
	}
	afterFirst := isoFile(t, iso, "network-config")
	if n := strings.Count(afterFirst, secondaryMAC); n != 1 {
		t.Fatalf("network-config after the first PreBoot names %s %d times, want once:\n%s", secondaryMAC, n, afterFirst)
	}
	if dom, err := domainrun.DefineAndStart(ctx, conn, first); err == nil {
		dom.Free()
		t.Fatal("the first start succeeded although the data disk is missing")
	} else if !strings.Contains(err.Error(), "start domain") || !strings.Contains(err.Error(), data) {
		t.Fatalf("first start: %v, want a start error naming %s", err, data)
	}

	// The volume arrives; the host runs the boot hooks again and starts.
	if err := os.WriteFile(data, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	second, err := p.Boot(ctx, vmi, domain, artifacts)
	if err != nil {
		t.Fatalf("PreBoot re-run: %v", err)
	}
	afterSecond := isoFile(t, iso, "network-config")
	if afterSecond != afterFirst {
		t.Fatalf("network-config changed when PreBoot ran again:\nfirst run:\n%s\nsecond run:\n%s", afterFirst, afterSecond)
	}
	if got := isoFile(t, iso, "user-data"); got != userData {
		t.Fatalf("user-data after the re-run = %q, want it unchanged", got)
	}
	if label := isoLabel(t, iso); !strings.EqualFold(label, "cidata") {
		t.Fatalf("volume label after the re-run = %q, want cidata", label)
	}
	bootRunning(ctx, t, node, conn, second)
}
