// SPDX-License-Identifier: Apache-2.0

// Package probe is what the cold-start drivers share: it loads their inputs
// and measures one piece of work in the process that runs it, the wall time
// and the growth of the resident set (VmRSS in /proc/self/status) across it,
// and writes the result as one JSON line on standard output. Both drivers
// measure through it, so they measure the same way.
package probe

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
	"sigs.k8s.io/yaml"
)

// Result is one measurement.
type Result struct {
	Case string `json:"case"`
	// WallNS is the wall time of the work, in nanoseconds.
	WallNS int64 `json:"wallNS"`
	// CPUNS is the CPU time (user and system, every thread of the process)
	// the work took, in nanoseconds: on a shared machine it moves less
	// than the wall time, which counts the time other processes ran.
	CPUNS int64 `json:"cpuNS"`
	// RSSGrowthKiB is VmRSS after the work minus VmRSS before it.
	RSSGrowthKiB int64 `json:"rssGrowthKiB"`
	// RSSBeforeKiB is VmRSS before the work: the process with its inputs
	// loaded.
	RSSBeforeKiB int64 `json:"rssBeforeKiB"`
}

// Run measures work, once, and prints the Result; it exits with status 1
// when work fails.
func Run(name string, work func() error) {
	// Finish the garbage collection that loading the inputs started, so that
	// its work and its pages do not land in the measurement; then read the
	// status file and the CPU time once, so that the code reading them is
	// paged in on both sides of the work.
	runtime.GC()
	if _, err := rssKiB(); err != nil {
		fail(err)
	}
	_ = cpuTime()
	before, err := rssKiB()
	if err != nil {
		fail(err)
	}
	cpu0 := cpuTime()
	start := time.Now()
	if err := work(); err != nil {
		fail(fmt.Errorf("%s: %w", name, err))
	}
	wall := time.Since(start)
	cpu := cpuTime() - cpu0
	after, err := rssKiB()
	if err != nil {
		fail(err)
	}
	out, err := json.Marshal(Result{Case: name, WallNS: wall.Nanoseconds(), CPUNS: cpu.Nanoseconds(), RSSGrowthKiB: after - before, RSSBeforeKiB: before})
	if err != nil {
		fail(err)
	}
	fmt.Println(string(out))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

// cpuTime is the CPU time the process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fail(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rssKiB reads VmRSS, the resident set in KiB: anonymous memory and the
// pages of the binary and its mappings touched so far.
func rssKiB() (int64, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	s := bufio.NewScanner(bytes.NewReader(data))
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		}
	}
	return 0, errors.New("no VmRSS line in /proc/self/status")
}

// Inputs are what a launcher holds before it runs its hooks: the domain it
// generated, the VMI, and the plugins virt-handler handed over (a JSON
// PluginList).
type Inputs struct {
	Domain  *libvirtxml.Domain
	VMI     *kubevirtv1.VirtualMachineInstance
	Plugins []byte
}

// Args reads the command line of a driver, `driver CASE DOMAIN.xml VMI.yaml
// PLUGINS.json`, and loads the inputs; on a mistake it prints usage (the
// driver's cases) and exits.
func Args(usage string) (string, Inputs) {
	if len(os.Args) < 2 {
		fmt.Fprintf(os.Stderr, "usage: %s %s DOMAIN.xml VMI.yaml PLUGINS.json\n", os.Args[0], usage)
		os.Exit(2)
	}
	in, err := Load(os.Args[2:])
	if err != nil {
		fail(err)
	}
	return os.Args[1], in
}

// Unknown reports a case the driver does not have and exits.
func Unknown(name string) {
	fmt.Fprintf(os.Stderr, "unknown case %q\n", name)
	os.Exit(2)
}

// Load reads the inputs from the files the benchmark names: the domain XML,
// the VMI YAML and the plugins JSON, in this order.
func Load(paths []string) (Inputs, error) {
	if len(paths) != 3 {
		return Inputs{}, fmt.Errorf("want the domain, VMI and plugins files, got %d arguments", len(paths))
	}
	xml, err := os.ReadFile(paths[0])
	if err != nil {
		return Inputs{}, err
	}
	in := Inputs{Domain: &libvirtxml.Domain{}, VMI: &kubevirtv1.VirtualMachineInstance{}}
	if err := in.Domain.Unmarshal(string(xml)); err != nil {
		return Inputs{}, fmt.Errorf("%s: %w", paths[0], err)
	}
	vmi, err := os.ReadFile(paths[1])
	if err != nil {
		return Inputs{}, err
	}
	if err := yaml.Unmarshal(vmi, in.VMI); err != nil {
		return Inputs{}, fmt.Errorf("%s: %w", paths[1], err)
	}
	if in.Plugins, err = os.ReadFile(paths[2]); err != nil {
		return Inputs{}, err
	}
	return in, nil
}
