// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	kubevirtv1 "kubevirt.io/api/core/v1"
)

func TestDurStatsAreMedianAndNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 20; i++ {
		ds = append(ds, time.Duration(21-i)*time.Millisecond)
	}
	st := durStats(ds)
	if st.n != 20 || st.median != 10500*time.Microsecond || st.min != time.Millisecond || st.max != 20*time.Millisecond ||
		st.p95 != 19*time.Millisecond || st.p99 != 20*time.Millisecond {
		t.Errorf("got %+v", st)
	}
	if st := durStats([]time.Duration{3, 1, 2}); st.median != 2 || st.p95 != 3 {
		t.Errorf("odd count: got %+v", st)
	}
	if st := durStats(nil); st.n != 0 {
		t.Errorf("no figures: got %+v", st)
	}
}

// sampleBoot is a boot of a VM with two sidecars: created at t0, the VMI
// seen Scheduling at 0.5 s, Scheduled at 9 s, Running at 14 s.
func sampleBoot() kvBoot {
	t0 := time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	return kvBoot{
		created: t0,
		seen: map[kubevirtv1.VirtualMachineInstancePhase]time.Duration{
			kubevirtv1.Pending: 200 * time.Millisecond, kubevirtv1.Scheduling: 500 * time.Millisecond,
			kubevirtv1.Scheduled: 9 * time.Second, kubevirtv1.Running: 14 * time.Second,
		},
		pod: podTimes{
			Sandbox:  at(1500),
			Sidecars: []containerTimes{{Name: "a", Created: at(1600), Started: at(2000)}, {Name: "b", Created: at(2100), Started: at(2600)}},
			Compute:  containerTimes{Name: "compute", Created: at(2700), Started: at(3000)},
		},
		hooks: 70 * time.Millisecond,
		mem:   map[string]int64{"compute": 100 << 20, "a": 8 << 20, "b": 6 << 20},
	}
}

// TestBootItemsAddUpToCreationToRunning: the items are the boot cut in
// parts one after another, so they add up to creation to Running.
func TestBootItemsAddUpToCreationToRunning(t *testing.T) {
	b := sampleBoot()
	var sum time.Duration
	var names []string
	for _, it := range b.items() {
		if it.took < 0 {
			t.Errorf("item %q took %s", it.name, it.took)
		}
		sum += it.took
		names = append(names, it.name)
	}
	if sum != b.running() {
		t.Errorf("items add up to %s, want %s (%v)", sum, b.running(), names)
	}
	if got := b.items()[2]; got.name != "to the last native sidecar started" || got.took != 1100*time.Millisecond {
		t.Errorf("the sidecars' item: %+v", got)
	}
	b.pod.Sidecars = nil
	if len(b.items()) != 5 {
		t.Errorf("without sidecars: %d items, want 5", len(b.items()))
	}
}

func TestParseCPU(t *testing.T) {
	if d, err := parseCPU("cpuacct.usage", "1500000000\n"); err != nil || d != 1500*time.Millisecond {
		t.Errorf("v1: %s, %v", d, err)
	}
	if d, err := parseCPU("cpu.stat", "usage_usec 2500000\nuser_usec 1\n"); err != nil || d != 2500*time.Millisecond {
		t.Errorf("v2: %s, %v", d, err)
	}
	if _, err := parseCPU("cpu.stat", "user_usec 1\n"); err == nil {
		t.Error("no usage: want an error")
	}
}

// TestReportHasEveryCaseItsPartsAndTheFullNode: each case's creation to
// Running, the framework's share (patched only), each part of the boot,
// each container's memory and the node full of VMs are in the report.
func TestReportHasEveryCaseItsPartsAndTheFullNode(t *testing.T) {
	b := &kvBench{samples: map[string][]kvBoot{}, handler: map[string]int64{"no Plugin (release): w1": 50 << 20}}
	for _, c := range slices.Concat(releaseCases, patchedCases, sidecarCases) {
		b.samples[c.name] = []kvBoot{sampleBoot(), sampleBoot()}
	}
	b.dense = &kvDense{n: 2, node: "w1", running: []time.Duration{20 * time.Second, 30 * time.Second}, wall: 31 * time.Second,
		nodeCPU: 40 * time.Second, machine: 50 * time.Second, perVM: map[string]int64{"compute": 90 << 20}, handler: 60 << 20, domainsOK: 2}
	var buf bytes.Buffer
	b.write(&buf)
	out := buf.String()
	for _, want := range []string{
		"| alpha-1 CEL hook (release) | 2 | 14000 (14000–14000) | not exposed by the release | – | 100.0 |",
		"| launcher CEL hook (patched) | 2 | 14000 (14000–14000) | 70.0 (70.0–70.0) | 0.5 % (0.5–0.5 %) | 100.0 |",
		"| to the last native sidecar started | kubelet: guest-console-log, KubeVirt's init containers before the plugins' sidecars | 1100 (1100–1100) |",
		"| Scheduled to Running | virt-handler, virt-launcher, libvirt; the hooks | 5000 (5000–5000) |",
		"| three Go sample sidecars (patched) | compute 100.0, a 8.0, b 6.0 |",
		"no Plugin (release): w1 50.0;",
		"Creation to Running per VM: median 25000 ms, p95 30000 ms",
		"Domains with every change: 2 of 2. Working set per VM, MiB: compute 90.0; virt-handler on w1: 60.0 MiB.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
}
