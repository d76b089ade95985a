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

	"github.com/kubevirt-plugins/framework/tests/cluster/standin/cmdsock"
)

// bootSample is one boot: when the bench sent the launcher Pod's create,
// the runtime's times of the Pod, and the stand-ins' timeline.
type bootSample struct {
	Case     string
	VMI      string
	Created  time.Time
	Pod      podTimes
	Timeline cmdsock.Timeline
}

// Whose time an item is.
const (
	whoKubelet   = "API server, scheduler, kubelet"
	whoSidecars  = "kubelet, sidecar containers"
	whoStandin   = "stand-ins (not the framework)"
	whoFramework = "framework"
	whoHooks     = "framework + sidecars' handlers"
	whoLibvirt   = "libvirt, QEMU"
)

// item is one part of a boot, on its critical path.
type item struct {
	name, who string
	took      time.Duration
}

// items cuts the boot, from the Pod's create to the domain running, into
// its parts, one after another, so that they add up to total.
func (s bootSample) items() []item {
	l := s.Timeline.Launcher
	step := func(list []cmdsock.Step, name string) cmdsock.Step { st, _ := cmdsock.Find(list, name); return st }
	preVM, sel, cmd := step(s.Timeline.Handler, cmdsock.StepPreVMStart), step(s.Timeline.Handler, cmdsock.StepSelectPlugins), step(s.Timeline.Handler, cmdsock.StepBootCommand)
	var out []item
	add := func(name, who string, from, to time.Time) { out = append(out, item{name, who, to.Sub(from)}) }
	add("Pod create to sandbox", whoKubelet, s.Created, s.Pod.Sandbox)
	before := s.Pod.Sandbox
	if n := len(s.Pod.Sidecars); n > 0 {
		add("sandbox to first sidecar created", whoKubelet, before, s.Pod.Sidecars[0].Created)
		add("sidecars started, one after another", whoSidecars, s.Pod.Sidecars[0].Created, s.Pod.Sidecars[n-1].Started)
		before = s.Pod.Sidecars[n-1].Started
	}
	add("to compute started", whoKubelet, before, s.Pod.Compute.Started)
	add("libvirtd start, command socket", whoStandin, s.Pod.Compute.Started, l.Serving)
	add("handler picks the launcher up", whoStandin, l.Serving, preVM.Start)
	add("PreVMStart node hooks", whoFramework, preVM.Start, preVM.End)
	add("launcher plugins chosen", whoFramework, sel.Start, sel.End)
	add("boot command sent", whoStandin, cmd.Start, l.Steps[0].Start)
	for _, st := range l.Steps {
		switch st.Name {
		case cmdsock.StepHandover:
			add("plugins handed over, pipeline built", whoFramework, st.Start, st.End)
		case cmdsock.StepISO:
			add("NoCloud ISO", whoStandin, st.Start, st.End)
		case cmdsock.StepGuestDefinition, cmdsock.StepPreBoot:
			add(st.Name+" hooks", whoHooks, st.Start, st.End)
		case cmdsock.StepDefineAndStart:
			add("define and start", whoLibvirt, st.Start, st.End)
		}
	}
	return out
}

// total is the time from the Pod's create to the domain running.
func (s bootSample) total() time.Duration {
	steps := s.Timeline.Launcher.Steps
	return steps[len(steps)-1].End.Sub(s.Created)
}

// frameworkShare is the framework's own part of the boot: the node hooks
// before it, choosing and handing over the plugins, and the two hook
// points, which hold the sidecars' handlers' work too (an upper bound).
func (s bootSample) frameworkShare() time.Duration {
	var d time.Duration
	for _, it := range s.items() {
		if it.who == whoFramework || it.who == whoHooks {
			d += it.took
		}
	}
	return d
}

// socketWait is what the launcher hooks of the boot waited for sockets.
func (s bootSample) socketWait() time.Duration {
	var d time.Duration
	for _, h := range s.Timeline.Launcher.Hooks {
		d += h.SocketWait
	}
	return d
}

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

// bootSummary sums up the boots of one case, item by item.
type bootSummary struct {
	items                        []string
	who                          map[string]string
	byItem                       map[string]stats
	total, framework, socketWait stats
	// hooks sums up each launcher hook's duration and socket wait.
	hooks     []string
	hookStats map[string][2]stats
	// sidecarStart sums up each sidecar container's created-to-started.
	sidecarStart map[string]stats
}

func summarize(boots []bootSample) bootSummary {
	sum := bootSummary{who: map[string]string{}, byItem: map[string]stats{}, hookStats: map[string][2]stats{}, sidecarStart: map[string]stats{}}
	per := map[string][]time.Duration{}
	var total, fw, wait []time.Duration
	hookDur, hookWait := map[string][]time.Duration{}, map[string][]time.Duration{}
	sidecars := map[string][]time.Duration{}
	for _, b := range boots {
		for _, it := range b.items() {
			if _, ok := per[it.name]; !ok {
				sum.items = append(sum.items, it.name)
				sum.who[it.name] = it.who
			}
			per[it.name] = append(per[it.name], it.took)
		}
		total, fw, wait = append(total, b.total()), append(fw, b.frameworkShare()), append(wait, b.socketWait())
		for _, h := range b.Timeline.Launcher.Hooks {
			if h.Outcome == "skipped" {
				continue
			}
			k := h.HookPoint + " " + h.Plugin + " (" + h.Kind + ")"
			if _, ok := hookDur[k]; !ok {
				sum.hooks = append(sum.hooks, k)
			}
			hookDur[k], hookWait[k] = append(hookDur[k], h.Duration), append(hookWait[k], h.SocketWait)
		}
		for _, c := range b.Pod.Sidecars {
			sidecars[c.Name] = append(sidecars[c.Name], c.Started.Sub(c.Created))
		}
	}
	for k, v := range per {
		sum.byItem[k] = durStats(v)
	}
	for k := range hookDur {
		sum.hookStats[k] = [2]stats{durStats(hookDur[k]), durStats(hookWait[k])}
	}
	for k, v := range sidecars {
		sum.sidecarStart[k] = durStats(v)
	}
	sum.total, sum.framework, sum.socketWait = durStats(total), durStats(fw), durStats(wait)
	return sum
}

// BenchFigures are what RunBench measured.
type BenchFigures struct {
	// Boots are the boots of each case.
	Boots map[string][]bootSample
	// Memory are the sidecar containers' memory readings.
	Memory []memReading
	// Dense is the node full of VMs.
	Dense *denseFigures
}

// memReading is one container's memory at one moment.
type memReading struct {
	when, sidecar string
	mem           memStat
	// kubelet is the kubelet's own working set of the container, -1 when
	// its summary did not have it.
	kubelet int64
}

// denseFigures are the node full of VMs.
type denseFigures struct {
	n        int
	node     string
	boots    []bootSample
	wall     time.Duration            // first create to the last VMI Running
	nodeCPU  map[string]time.Duration // every node's CPU time over that wall time
	machine  time.Duration            // the machine's busy CPU time over it
	dispatch map[string][]time.Duration
	// perVM is each sample sidecar's working set summed over the node's
	// VMs and divided by their number; anon likewise.
	perVM, anonPerVM    map[string]int64
	handler             memStat
	domainsOK, guestsOK int
}

func mib(b int64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }

// write gives the figures as Markdown.
func (f *BenchFigures) write(w io.Writer) {
	cases := make([]string, 0, len(bootCases))
	for _, c := range bootCases {
		if len(f.Boots[c.name]) > 0 {
			cases = append(cases, c.name)
		}
	}
	if len(cases) > 0 {
		sums := map[string]bootSummary{}
		for _, c := range cases {
			sums[c] = summarize(f.Boots[c])
		}
		fmt.Fprintf(w, "### Boot, Pod created to domain running (ms: median (min–max))\n\n| part | whose | %s |\n|---|---|%s\n",
			strings.Join(cases, " | "), strings.Repeat("---|", len(cases)))
		// The rows in the order of the case with the most parts (its boots
		// have sidecars), then any part only another case has.
		order := slices.Clone(cases)
		slices.SortStableFunc(order, func(a, b string) int { return len(sums[b].items) - len(sums[a].items) })
		var rows []string
		for _, c := range order {
			for _, it := range sums[c].items {
				if !slices.Contains(rows, it) {
					rows = append(rows, it)
				}
			}
		}
		for _, it := range rows {
			who := ""
			cells := make([]string, 0, len(cases))
			for _, c := range cases {
				st, ok := sums[c].byItem[it]
				if !ok {
					cells = append(cells, "–")
					continue
				}
				who = sums[c].who[it]
				cells = append(cells, st.String())
			}
			fmt.Fprintf(w, "| %s | %s | %s |\n", it, who, strings.Join(cells, " | "))
		}
		line := func(name string, get func(bootSummary) stats) {
			cells := make([]string, 0, len(cases))
			for _, c := range cases {
				cells = append(cells, get(sums[c]).String())
			}
			fmt.Fprintf(w, "| **%s** | | %s |\n", name, strings.Join(cells, " | "))
		}
		line("total", func(s bootSummary) stats { return s.total })
		line("framework's share", func(s bootSummary) stats { return s.framework })
		line("of which socket wait", func(s bootSummary) stats { return s.socketWait })
		fmt.Fprintf(w, "\nBoots per case: ")
		for i, c := range cases {
			if i > 0 {
				fmt.Fprint(w, ", ")
			}
			fmt.Fprintf(w, "%s %d", c, sums[c].total.n)
		}
		fmt.Fprint(w, ".\n\n| launcher hook | case | duration | socket wait |\n|---|---|---|---|\n")
		for _, c := range cases {
			for _, h := range sums[c].hooks {
				st := sums[c].hookStats[h]
				fmt.Fprintf(w, "| %s | %s | %s | %s |\n", h, c, st[0], st[1])
			}
		}
		fmt.Fprint(w, "\n| sidecar container | created to started |\n|---|---|\n")
		for _, c := range cases {
			for _, n := range slices.Sorted(maps.Keys(sums[c].sidecarStart)) {
				fmt.Fprintf(w, "| %s | %s |\n", n, sums[c].sidecarStart[n])
			}
		}
		fmt.Fprintln(w)
	}
	if len(f.Memory) > 0 {
		fmt.Fprint(w, "### Sidecar memory, each container's cgroup (MiB)\n\n| when | sidecar | working set | kubelet's working set | anon | file | peak |\n|---|---|---|---|---|---|---|\n")
		for _, m := range f.Memory {
			kl := "–"
			if m.kubelet >= 0 {
				kl = mib(m.kubelet)
			}
			peak := "–"
			if m.mem.Peak >= 0 {
				peak = mib(m.mem.Peak)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", m.when, m.sidecar, mib(m.mem.WorkingSet()), kl, mib(m.mem.Anon), mib(m.mem.File), peak)
		}
		fmt.Fprintln(w)
	}
	if d := f.Dense; d != nil {
		sum := summarize(d.boots)
		fmt.Fprintf(w, "### %d VMs booted at once on %s\n\n", d.n, d.node)
		fmt.Fprintf(w, "- per-VM boot, Pod created to domain running: p50 %s ms, p95 %s ms (min %s, max %s); framework's share p50 %s ms, p95 %s ms\n",
			msShort(sum.total.median), msShort(sum.total.p95), msShort(sum.total.min), msShort(sum.total.max), msShort(sum.framework.median), msShort(sum.framework.p95))
		cores := float64(runtime.NumCPU())
		fmt.Fprintf(w, "- every VMI Running %s after the first create; meanwhile the node used %.1f CPU-seconds (%.0f%% of the machine's %.0f cores) and the whole machine was busy %.0f%%\n",
			d.wall.Round(100*time.Millisecond), d.nodeCPU[d.node].Seconds(), 100*d.nodeCPU[d.node].Seconds()/(cores*d.wall.Seconds()), cores, 100*d.machine.Seconds()/(cores*d.wall.Seconds()))
		var nodes []string
		var rest time.Duration
		for _, n := range slices.Sorted(maps.Keys(d.nodeCPU)) {
			nodes = append(nodes, fmt.Sprintf("%s %.1f", n, d.nodeCPU[n].Seconds()))
			rest += d.nodeCPU[n]
		}
		if len(nodes) > 0 {
			fmt.Fprintf(w, "- CPU-seconds in that time by node: %s; the rest of the machine (Docker, the benchmark, anything else) %.1f\n",
				strings.Join(nodes, ", "), (d.machine - rest).Seconds())
		}
		fmt.Fprintf(w, "- domains with every change: %d of %d; guests that saw every change: %d of %d\n", d.domainsOK, d.n, d.guestsOK, d.n)
		for _, p := range slices.Sorted(maps.Keys(d.dispatch)) {
			st := durStats(d.dispatch[p])
			fmt.Fprintf(w, "- handler node hook dispatch %s: %d calls, p50 %s ms, p99 %s ms, max %s ms\n", p, st.n, msShort(st.median), msShort(st.p99), msShort(st.max))
		}
		for _, n := range slices.Sorted(maps.Keys(d.perVM)) {
			fmt.Fprintf(w, "- %s: %s MiB working set per VM, %s MiB anon per VM\n", n, mib(d.perVM[n]), mib(d.anonPerVM[n]))
		}
		fmt.Fprintf(w, "- handler: working set %s MiB, anon %s MiB, peak %s MiB\n", mib(d.handler.WorkingSet()), mib(d.handler.Anon), mib(d.handler.Peak))
		fmt.Fprint(w, "\n| part | whose | per VM, median (min–max) | p95 |\n|---|---|---|---|\n")
		for _, it := range sum.items {
			st := sum.byItem[it]
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", it, sum.who[it], st, msShort(st.p95))
		}
		fmt.Fprintln(w)
	}
}
