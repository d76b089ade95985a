// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"fmt"
	"io"
	"maps"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"
)

// idleSettle is how long the launcher Pods of the node full of VMs are left
// alone before their memory is read.
const idleSettle = 15 * time.Second

// stats are the median and spread of some figures.
type stats struct {
	n                          int
	median, min, max, p95, p99 time.Duration
}

// durStats sums up ds. Percentiles are nearest-rank.
func durStats(ds []time.Duration) stats {
	if len(ds) == 0 {
		return stats{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return stats{n: len(s), median: med, min: s[0], max: s[len(s)-1], p95: rank(0.95), p99: rank(0.99)}
}

func (st stats) String() string {
	return fmt.Sprintf("%s (%s–%s)", msShort(st.median), msShort(st.min), msShort(st.max))
}

// msShort is d in milliseconds with three significant digits or more.
func msShort(d time.Duration) string {
	f := float64(d) / float64(time.Millisecond)
	switch {
	case f >= 100:
		return fmt.Sprintf("%.0f", f)
	case f >= 10:
		return fmt.Sprintf("%.1f", f)
	}
	return fmt.Sprintf("%.2f", f)
}

func mib(b int64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }

// write writes the figures as Markdown: the cases side by side, each
// case's boot cut into its parts, the launcher containers' and
// virt-handler's memory, and the node full of VMs.
func (b *kvBench) write(w io.Writer) {
	cases := slices.DeleteFunc(slices.Concat(releaseCases, patchedCases, sidecarCases), func(c kvCase) bool { return len(b.samples[c.name]) == 0 })
	fmt.Fprintf(w, "| case | boots | creation to Running, ms | the framework's hook time, ms | its share of creation to Running | compute's working set, MiB |\n|---|---|---|---|---|---|\n")
	for _, c := range cases {
		bs := b.samples[c.name]
		hooks, share := "not exposed by the release", "–"
		if c.build == "patched" {
			var hs []time.Duration
			var shares []time.Duration // in parts per million, to reuse durStats
			for _, s := range bs {
				hs = append(hs, s.hooks)
				shares = append(shares, time.Duration(float64(s.hooks)/float64(s.running())*1e6))
			}
			hooks = durStats(hs).String()
			sh := durStats(shares)
			share = fmt.Sprintf("%.2g %% (%.2g–%.2g %%)", float64(sh.median)/1e4, float64(sh.min)/1e4, float64(sh.max)/1e4)
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s |\n", c.name, len(bs), durStats(runningTimes(bs)), hooks, share, mib(medianOf(bs, "compute")))
	}
	fmt.Fprintf(w, "\nMedian (min–max), ms, of each part of the boot:\n\n| part | whose |")
	for _, c := range cases {
		fmt.Fprintf(w, " %s |", c.name)
	}
	fmt.Fprintf(w, "\n|---|---|%s\n", strings.Repeat("---|", len(cases)))
	var parts []kvItem
	for _, c := range cases {
		for _, it := range b.samples[c.name][0].items() {
			if !slices.ContainsFunc(parts, func(p kvItem) bool { return p.name == it.name }) {
				parts = append(parts, it)
			}
		}
	}
	for _, p := range parts {
		fmt.Fprintf(w, "| %s | %s |", p.name, p.who)
		for _, c := range cases {
			var ds []time.Duration
			for _, s := range b.samples[c.name] {
				for _, it := range s.items() {
					if it.name == p.name {
						ds = append(ds, it.took)
					}
				}
			}
			if len(ds) == 0 {
				fmt.Fprintf(w, " – |")
				continue
			}
			fmt.Fprintf(w, " %s |", durStats(ds))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\nEach launcher container's working set once the VMI runs, MiB (median):\n\n| case | containers |\n|---|---|\n")
	for _, c := range cases {
		var cs []string
		for _, k := range containerNames(b.samples[c.name]) {
			cs = append(cs, fmt.Sprintf("%s %s", k, mib(medianOf(b.samples[c.name], k))))
		}
		fmt.Fprintf(w, "| %s | %s |\n", c.name, strings.Join(cs, ", "))
	}
	if len(b.handler) > 0 {
		fmt.Fprintf(w, "\nvirt-handler's working set after the boots, MiB:")
		for _, k := range slices.Sorted(maps.Keys(b.handler)) {
			fmt.Fprintf(w, " %s %s;", k, mib(b.handler[k]))
		}
		fmt.Fprintln(w)
	}
	if d := b.dense; d != nil && len(d.running) > 0 {
		st := durStats(d.running)
		fmt.Fprintf(w, "\nA node full of VMs: %d VMs with the three Go sample sidecars created at once on %s. Creation to Running per VM: median %s ms, p95 %s ms, max %s ms; all Running %s after the create. Over that time the node used %.1f CPU-seconds; the machine was busy %.1f of the %.1f CPU-seconds its %d cores had. Domains with every change: %d of %d.",
			d.n, d.node, msShort(st.median), msShort(st.p95), msShort(st.max), d.wall.Round(time.Second), d.nodeCPU.Seconds(), d.machine.Seconds(), float64(runtime.NumCPU())*d.wall.Seconds(), runtime.NumCPU(), d.domainsOK, d.n)
		fmt.Fprintf(w, " Working set per VM, MiB:")
		for _, k := range slices.Sorted(maps.Keys(d.perVM)) {
			fmt.Fprintf(w, " %s %s;", k, mib(d.perVM[k]))
		}
		fmt.Fprintf(w, " virt-handler on %s: %s MiB.\n", d.node, mib(d.handler))
	}
}

// medianOf is the median working set of container c over the boots.
func medianOf(bs []kvBoot, c string) int64 {
	var v []time.Duration
	for _, s := range bs {
		v = append(v, time.Duration(s.mem[c]))
	}
	return int64(durStats(v).median)
}

// containerNames are the containers measured in the boots, compute first.
func containerNames(bs []kvBoot) []string {
	set := map[string]bool{}
	for _, s := range bs {
		for k := range s.mem {
			set[k] = true
		}
	}
	out := slices.DeleteFunc(slices.Sorted(maps.Keys(set)), func(k string) bool { return k == "compute" })
	if set["compute"] {
		out = append([]string{"compute"}, out...)
	}
	return out
}
