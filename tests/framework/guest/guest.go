// SPDX-License-Identifier: Apache-2.0

// Package guest is the test guest: a Linux kernel and a busybox initramfs
// built from Debian's packages by hack/build-guest.sh, booted directly by
// QEMU under TCG. Its init (hack/images/guest/init) reports on the serial
// console what the VM got, one "KVP-GUEST key=value" line a fact (boot id,
// vCPUs, SMBIOS system fields, the watchdog device, the NoCloud disk's
// files), then ticks once a second with its boot id. Parse reads that
// report: the guest's own view, the oracle of what plugins changed.
package guest

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"libvirt.org/go/libvirtxml"

	"github.com/kubevirt-plugins/framework/tests/framework/repo"
)

// DirEnv names a directory holding vmlinuz and initrd.img to use instead of
// building the guest.
const DirEnv = "KVP_GUEST_DIR"

// Files are the kernel's and initramfs' file names in a guest directory.
const (
	Kernel = "vmlinuz"
	Initrd = "initrd.img"
)

// Cmdline is the kernel command line: the console on the first serial port,
// the kernel's own messages kept off it, and a panic stopping the guest.
const Cmdline = "console=ttyS0 quiet panic=-1"

// MemoryMiB is the memory the guest needs to boot: the kernel unpacks
// itself and the initramfs into it.
const MemoryMiB = 192

// Dir returns the directory holding the guest's kernel and initramfs: $DirEnv,
// else the one hack/build-guest.sh prints (it builds the guest the first
// time, about 20 s, and reuses it after).
func Dir(tb testing.TB) string {
	tb.Helper()
	if d := os.Getenv(DirEnv); d != "" {
		return d
	}
	script, err := repo.Path("hack", "build-guest.sh")
	if err != nil {
		tb.Fatal(err)
	}
	out, err := exec.Command(script).Output()
	if err != nil {
		msg := ""
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			msg = string(ee.Stderr)
		}
		tb.Fatalf("building the test guest: %v\n%s", err, msg)
	}
	lines := strings.Fields(string(out))
	if len(lines) == 0 {
		tb.Fatal("hack/build-guest.sh printed no directory")
	}
	return lines[len(lines)-1]
}

// Boot makes d boot the guest: the kernel and initramfs at dir (a path the
// QEMU process sees), Cmdline, at least MemoryMiB, ACPI and the APIC (as
// KubeVirt's domains have them; without ACPI the kernel counts one CPU a
// socket), and the first serial port written to consoleLog, replacing d's
// serial ports.
func Boot(d *libvirtxml.Domain, dir, consoleLog string) {
	if d.Features == nil {
		d.Features = &libvirtxml.DomainFeatureList{}
	}
	if d.Features.ACPI == nil {
		d.Features.ACPI = &libvirtxml.DomainFeature{}
	}
	if d.Features.APIC == nil {
		d.Features.APIC = &libvirtxml.DomainFeatureAPIC{}
	}
	if d.OS == nil {
		d.OS = &libvirtxml.DomainOS{}
	}
	d.OS.Kernel = filepath.Join(dir, Kernel)
	d.OS.Initrd = filepath.Join(dir, Initrd)
	d.OS.Cmdline = Cmdline
	if d.Memory == nil || memoryMiB(d.Memory) < MemoryMiB {
		d.Memory = &libvirtxml.DomainMemory{Value: MemoryMiB, Unit: "MiB"}
	}
	if d.Devices == nil {
		d.Devices = &libvirtxml.DomainDeviceList{}
	}
	port := uint(0)
	d.Devices.Serials = []libvirtxml.DomainSerial{{
		Source: &libvirtxml.DomainChardevSource{File: &libvirtxml.DomainChardevSourceFile{Path: consoleLog}},
		Target: &libvirtxml.DomainSerialTarget{Port: &port},
	}}
	d.Devices.Consoles = nil
}

func memoryMiB(m *libvirtxml.DomainMemory) uint {
	switch strings.ToLower(m.Unit) {
	case "", "kib", "k":
		return m.Value >> 10
	case "mib", "m":
		return m.Value
	case "gib", "g":
		return m.Value << 10
	}
	return m.Value >> 20 // bytes
}

// Tick is one of the guest's once-a-second lines.
type Tick struct {
	N      int
	BootID string
	// Uptime is the guest's /proc/uptime, in seconds.
	Uptime float64
	// Watchdog: /dev/watchdog was there at that tick.
	Watchdog bool
}

// Report is what the guest printed.
type Report struct {
	// Ready: the guest got through its report and started ticking.
	Ready  bool
	BootID string
	VCPUs  int
	// DMI holds /sys/class/dmi/id's fields by file name (sys_vendor,
	// product_name, product_family, ...).
	DMI map[string]string
	// Watchdog: /dev/watchdog exists; WatchdogIdentity is the driver's
	// name for it ("i6300ESB timer").
	Watchdog         bool
	WatchdogIdentity string
	// CIData: the NoCloud disk was mounted; CIDataFiles holds its files'
	// lines by file name.
	CIData      bool
	CIDataFiles map[string][]string
	Ticks       []Tick
	// PowerButton: the guest saw its ACPI power button pressed and is
	// powering off.
	PowerButton bool
	// Errors are the guest's own complaints (a module that did not load).
	Errors []string
	// Lines are every report line, for messages.
	Lines []string
}

// Prefix begins every report line.
const Prefix = "KVP-GUEST "

// Parse reads the report lines in a console log; other lines (the kernel's)
// are skipped. A log from a migration target holds only what the guest
// printed there: ticks.
func Parse(console string) Report {
	r := Report{DMI: map[string]string{}, CIDataFiles: map[string][]string{}}
	sc := bufio.NewScanner(strings.NewReader(console))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		i := strings.Index(line, Prefix)
		if i < 0 {
			continue
		}
		line = line[i+len(Prefix):]
		r.Lines = append(r.Lines, line)
		key, val, _ := strings.Cut(line, "=")
		switch {
		case key == "ready":
			r.Ready = val == "1"
		case key == "boot_id":
			r.BootID = val
		case key == "vcpus":
			r.VCPUs, _ = strconv.Atoi(val)
		case strings.HasPrefix(key, "dmi."):
			r.DMI[strings.TrimPrefix(key, "dmi.")] = val
		case key == "watchdog":
			r.Watchdog = val == "present"
		case key == "watchdog.identity":
			r.WatchdogIdentity = val
		case key == "cidata":
			r.CIData = val == "mounted"
		case strings.HasPrefix(key, "cidata."):
			f := strings.TrimPrefix(key, "cidata.")
			r.CIDataFiles[f] = append(r.CIDataFiles[f], val)
		case key == "power":
			r.PowerButton = val == "button"
		case key == "error":
			r.Errors = append(r.Errors, val)
		case key == "tick":
			if t, ok := parseTick(line); ok {
				r.Ticks = append(r.Ticks, t)
			}
		}
	}
	return r
}

// parseTick reads "tick=N boot_id=ID uptime=S watchdog=present|absent".
func parseTick(line string) (Tick, bool) {
	var t Tick
	fields := map[string]string{}
	for f := range strings.FieldsSeq(line) {
		k, v, _ := strings.Cut(f, "=")
		fields[k] = v
	}
	var err error
	if t.N, err = strconv.Atoi(fields["tick"]); err != nil {
		return t, false
	}
	if t.Uptime, err = strconv.ParseFloat(fields["uptime"], 64); err != nil {
		return t, false
	}
	t.BootID, t.Watchdog = fields["boot_id"], fields["watchdog"] == "present"
	return t, t.BootID != ""
}

// LastTick is the last tick printed, and false when there is none.
func (r Report) LastTick() (Tick, bool) {
	if len(r.Ticks) == 0 {
		return Tick{}, false
	}
	return r.Ticks[len(r.Ticks)-1], true
}
