// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"bytes"
	"strings"
	"testing"
	"time"
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

// sampleBoot is goodTimeline's boot with its Pod: created 300 ms before
// the launcher started, two sidecars.
func sampleBoot() bootSample {
	tl := goodTimeline()
	t0 := tl.Launcher.Started
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	return bootSample{
		Case: "c", VMI: "vm", Created: at(-300), Timeline: *tl,
		Pod: podTimes{
			Sandbox:  at(-250),
			Sidecars: []containerTimes{{Name: "a", Created: at(-200), Started: at(-150)}, {Name: "b", Created: at(-140), Started: at(-90)}},
			Compute:  containerTimes{Name: "compute", Created: at(-60), Started: at(-10)},
		},
	}
}

// TestBootItemsAddUpToTheBoot: the items are the boot cut in parts one
// after another, so they add up to the Pod's create to the domain running.
func TestBootItemsAddUpToTheBoot(t *testing.T) {
	b := sampleBoot()
	var sum time.Duration
	for _, it := range b.items() {
		if it.took < 0 {
			t.Errorf("item %q took %s", it.name, it.took)
		}
		sum += it.took
	}
	if want := 1500 * time.Millisecond; b.total() != want || sum != want {
		t.Errorf("total %s, items add up to %s, want %s", b.total(), sum, want)
	}
	// PreVMStart 5, select 1, handover 2, GuestDefinition 15, PreBoot 10.
	if got, want := b.frameworkShare(), 33*time.Millisecond; got != want {
		t.Errorf("framework share %s, want %s", got, want)
	}
	if got := b.socketWait(); got != 3*time.Millisecond {
		t.Errorf("socket wait %s, want 3ms", got)
	}
	// A boot without sidecars has no sidecar items and still adds up.
	b.Pod.Sidecars = nil
	sum = 0
	for _, it := range b.items() {
		if strings.Contains(it.name, "sidecar") {
			t.Errorf("item %q in a boot without sidecars", it.name)
		}
		sum += it.took
	}
	if sum != b.total() {
		t.Errorf("without sidecars the items add up to %s, want %s", sum, b.total())
	}
}

func TestParseCgroupMemoryV1AndV2(t *testing.T) {
	out := `== aaa
version 1
current 16609280
peak 20000000
cache 3850240
rss 12111872
inactive_file 524288
active_file 3330048
total_rss 99
== bbb
version 2
current 9000000
peak -1
anon 6000000
file 2500000
active_file 2000000
inactive_file 500000
== ccc
gone 1
`
	got, err := parseCgroupMemory(out)
	if err != nil {
		t.Fatal(err)
	}
	a, b := got["aaa"], got["bbb"]
	if a.Anon != 12111872 || a.File != 3850240 || a.WorkingSet() != 16609280-524288 || a.Peak != 20000000 {
		t.Errorf("v1: got %+v", a)
	}
	if b.Anon != 6000000 || b.File != 2500000 || b.WorkingSet() != 8500000 || b.Peak != -1 {
		t.Errorf("v2: got %+v", b)
	}
	if c, ok := got["ccc"]; !ok || !c.Gone || b.Gone {
		t.Errorf("a container that ended: got %+v (and %+v for one that runs)", c, b)
	}
	if _, err := parseCgroupMemory("current x\n"); err == nil {
		t.Error("nothing read: want an error")
	}
	if _, err := parseCgroupMemory("== a\ncurrent twelve\n"); err == nil {
		t.Error("a value that is not a number: want an error")
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

// TestParseDispatchesReadsTheHandlersLog reads the lines the stand-in
// handler writes, keeping the run's VMIs only.
func TestParseDispatchesReadsTheHandlersLog(t *testing.T) {
	log := `virt-handler "level"=0 "msg"="Plugin store synced; watching the VMIs of this node" "node"="kvp-worker"
virt-handler "level"=0 "msg"="node hooks dispatched" "hookPoint"="PreVMStart" "vmi"="default/bench-dense-1-3" "took"="2.5ms" "error"=""
virt-handler "level"=0 "msg"="node hooks dispatched" "hookPoint"="PostVMStart" "vmi"="default/bench-dense-1-3" "took"="1.25ms" "error"=""
virt-handler "level"=0 "msg"="node hooks dispatched" "hookPoint"="PreVMStart" "vmi"="default/demo-vm" "took"="9ms" "error"=""
`
	got := parseDispatches(log, "bench-dense-1")
	if len(got) != 2 || len(got["PreVMStart"]) != 1 || got["PreVMStart"][0] != 2500*time.Microsecond || got["PostVMStart"][0] != 1250*time.Microsecond {
		t.Errorf("got %v", got)
	}
}

// TestFiguresAreWrittenAsTables: every case's items, the totals and the
// node's figures are in the report.
func TestFiguresAreWrittenAsTables(t *testing.T) {
	f := &BenchFigures{Boots: map[string][]bootSample{}}
	for _, c := range bootCases {
		f.Boots[c.name] = []bootSample{sampleBoot(), sampleBoot()}
	}
	f.Memory = []memReading{{when: "idle after boot", sidecar: "smbios-watchdog", mem: memStat{Current: 10 << 20, InactiveFile: 1 << 20, Anon: 6 << 20, Peak: -1}, kubelet: 9 << 20}}
	f.Dense = &denseFigures{n: 2, node: "w", boots: []bootSample{sampleBoot(), sampleBoot()}, wall: 10 * time.Second, nodeCPU: map[string]time.Duration{"w": 5 * time.Second},
		machine: 8 * time.Second, dispatch: map[string][]time.Duration{"PreVMStart": {time.Millisecond, 3 * time.Millisecond}},
		perVM: map[string]int64{"smbios-watchdog": 8 << 20}, anonPerVM: map[string]int64{"smbios-watchdog": 5 << 20}, domainsOK: 2, guestsOK: 2}
	var buf bytes.Buffer
	f.write(&buf)
	out := buf.String()
	for _, want := range []string{
		"| part | whose | no launcher plugin | CEL plugins only | the three Go sample sidecars |",
		"| sidecars started, one after another | kubelet, sidecar containers | 110 (110–110) |",
		"| **total** | | 1500 (1500–1500) |",
		"| **framework's share** | | 33.0 (33.0–33.0) |",
		"| idle after boot | smbios-watchdog | 9.0 | 9.0 | 6.0 |",
		"handler node hook dispatch PreVMStart: 2 calls, p50 2.00 ms, p99 3.00 ms",
		"smbios-watchdog: 8.0 MiB working set per VM, 5.0 MiB anon per VM",
		"domains with every change: 2 of 2; guests that saw every change: 2 of 2",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
}
