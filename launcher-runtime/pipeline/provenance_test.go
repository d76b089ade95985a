// SPDX-License-Identifier: Apache-2.0

package pipeline_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"libvirt.org/go/libvirtxml"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
)

// lineLog keeps the lines a logr.Logger writes, at every verbosity up to v.
type lineLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *lineLog) logger(v int) logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, args)
	}, funcr.Options{Verbosity: v})
}

func (l *lineLog) matching(part string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.lines {
		if strings.Contains(s, part) {
			out = append(out, s)
		}
	}
	return out
}

// written lists the report's hooks as "plugin#index: paths".
func written(r *pipeline.Report) []string {
	var out []string
	for _, h := range r.Hooks {
		paths := strings.Join(h.Written, " ")
		if !h.WrittenKnown {
			paths = "?"
		}
		out = append(out, fmt.Sprintf("%s#%d: %s", h.Plugin, h.HookIndex, paths))
	}
	return out
}

func overlaps(r *pipeline.Report) []string {
	var out []string
	for _, o := range r.Overlaps {
		out = append(out, o.String())
	}
	return out
}

// TestOverlapsBetweenPluginsAreReportedNamingBoth: a part of the domain
// changed by a hook of one plugin after a hook of another is an overlap
// naming both hooks and both paths; it is counted and logged. Two hooks of
// one plugin changing the same part are not an overlap, nor are parts side
// by side. Sidecars are compared because Options.TrackSidecarWrites is set.
func TestOverlapsBetweenPluginsAreReportedNamingBoth(t *testing.T) {
	root := socketRoot(t)
	reg := prometheus.NewPedanticRegistry()
	var log lineLog
	plugins := []pluginv1alpha1.Plugin{
		plugin("a-tuning",
			celHook(`Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`),
			celHook(`Domain{CPU: DomainCPU{Mode: "host-model", Topology: DomainCPUTopology{Cores: 4}}}`)),
		plugin("b-tuning", celHook(`Domain{CPU: DomainCPU{Mode: "custom"}, Title: "b"}`)),
		plugin("c-sidecar", sidecarHook(serve(t, root, "c-sidecar", "hook.sock", &sidecar{
			guestDefinition: editDomain(func(d *libvirtxml.Domain) { d.Title = "c"; d.Description = "c" }),
		}), gd)),
		plugin("d-whole-cpu", celHook(`Domain{CPU: DomainCPU{Mode: "maximum", Topology: DomainCPUTopology{Cores: 2}}}`)),
	}
	p := newPipeline(t, root, plugins, func(o *pipeline.Options) {
		o.TrackSidecarWrites = true
		o.Registerer = reg
		o.Logger = log.logger(0)
	})
	out, report, err := p.GuestDefinitionWithReport(t.Context(), testVMI(t), testDomain(t), pipeline.Boot)
	if err != nil {
		t.Fatal(err)
	}
	if out.CPU.Mode != "maximum" || out.Title != "c" {
		t.Fatalf("domain CPU mode %q, title %q: the chain did not run in order", out.CPU.Mode, out.Title)
	}
	wantWritten := []string{
		"a-tuning#0: CPU.Mode",
		"a-tuning#1: CPU.Mode CPU.Topology.Cores",
		"b-tuning#0: CPU.Mode Title",
		"c-sidecar#0: Title Description",
		"d-whole-cpu#0: CPU.Mode CPU.Topology.Cores",
	}
	if got := written(report); !slices.Equal(got, wantWritten) {
		t.Errorf("written:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantWritten, "\n"))
	}
	wantOverlaps := []string{
		`plugin "b-tuning" launcher hook #0 (cel) overwrote CPU.Mode, written by plugin "a-tuning" launcher hook #1 (cel)`,
		`plugin "c-sidecar" launcher hook #0 (sidecar) overwrote Title, written by plugin "b-tuning" launcher hook #0 (cel)`,
		`plugin "d-whole-cpu" launcher hook #0 (cel) overwrote CPU.Mode, written by plugin "b-tuning" launcher hook #0 (cel)`,
		`plugin "d-whole-cpu" launcher hook #0 (cel) overwrote CPU.Topology.Cores, written by plugin "a-tuning" launcher hook #1 (cel)`,
	}
	if got := overlaps(report); !slices.Equal(got, wantOverlaps) {
		t.Errorf("overlaps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantOverlaps, "\n"))
	}
	for _, tc := range []struct {
		plugin, overwritten string
		want                float64
	}{{"b-tuning", "a-tuning", 1}, {"c-sidecar", "b-tuning", 1}, {"d-whole-cpu", "b-tuning", 1}, {"d-whole-cpu", "a-tuning", 1}} {
		if got := counterValue(t, reg, pipeline.MetricHookOverlaps, map[string]string{"hook_point": "GuestDefinition", "plugin": tc.plugin, "overwritten_plugin": tc.overwritten}); got != tc.want {
			t.Errorf("%s{plugin=%s, overwritten_plugin=%s} = %v, want %v", pipeline.MetricHookOverlaps, tc.plugin, tc.overwritten, got, tc.want)
		}
	}
	if lines := log.matching("domain changed by two plugins"); len(lines) != len(wantOverlaps) ||
		!strings.Contains(lines[0], `"plugin"="b-tuning"`) || !strings.Contains(lines[0], `"overwrittenPlugin"="a-tuning"`) || !strings.Contains(lines[0], `"path"="CPU.Mode"`) {
		t.Errorf("overlap log lines %q, want one per overlap naming both plugins and the path", lines)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", err, problems)
	}
}

// A part held by another overlaps: a hook replacing a list a sidecar edited
// one element of names the list and the element.
func TestOverlapOfAPartHoldingAnotherNamesBothPaths(t *testing.T) {
	root := socketRoot(t)
	plugins := []pluginv1alpha1.Plugin{
		plugin("a-sidecar", sidecarHook(serve(t, root, "a-sidecar", "hook.sock", &sidecar{
			guestDefinition: editDomain(func(d *libvirtxml.Domain) { d.Devices.Disks[0].Driver.Cache = "writeback" }),
		}), gd)),
		plugin("b-cel", celHook(`Domain{Devices: DomainDeviceList{Disks: []}}`)),
	}
	p := newPipeline(t, root, plugins, func(o *pipeline.Options) { o.TrackSidecarWrites = true })
	_, report, err := p.GuestDefinitionWithReport(t.Context(), testVMI(t), testDomain(t), pipeline.Boot)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`plugin "b-cel" launcher hook #0 (cel) overwrote Devices.Disks, written by plugin "a-sidecar" launcher hook #0 (sidecar) at Devices.Disks[0].Driver.Cache`}
	if got := overlaps(report); !slices.Equal(got, want) {
		t.Errorf("overlaps %q, want %q", got, want)
	}
}

// Sidecars answer a whole domain; comparing it with what they were given
// costs a decoding, so it is done only when asked (Options) or when the
// Logger is enabled at V(1). CEL hooks are tracked either way.
func TestSidecarWritesAreComparedOnlyWhenAskedOrAtVerbosity1(t *testing.T) {
	root := socketRoot(t)
	plugins := []pluginv1alpha1.Plugin{
		plugin("a-cel", celHook(`Domain{Title: "a"}`)),
		plugin("b-sidecar", sidecarHook(serve(t, root, "b-sidecar", "hook.sock", &sidecar{
			guestDefinition: editDomain(func(d *libvirtxml.Domain) { d.Title = "b" }),
		}), gd)),
	}
	for _, tc := range []struct {
		name     string
		opts     func(*pipeline.Options)
		written  []string
		overlaps int
	}{
		{"default", func(*pipeline.Options) {}, []string{"a-cel#0: Title", "b-sidecar#0: ?"}, 0},
		{"TrackSidecarWrites", func(o *pipeline.Options) { o.TrackSidecarWrites = true }, []string{"a-cel#0: Title", "b-sidecar#0: Title"}, 1},
		{"logger at V(1)", func(o *pipeline.Options) { o.Logger = (&lineLog{}).logger(1) }, []string{"a-cel#0: Title", "b-sidecar#0: Title"}, 1},
		{"logger at V(0)", func(o *pipeline.Options) { o.Logger = (&lineLog{}).logger(0) }, []string{"a-cel#0: Title", "b-sidecar#0: ?"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPipeline(t, root, plugins, tc.opts)
			out, report, err := p.GuestDefinitionWithReport(t.Context(), testVMI(t), testDomain(t), pipeline.Boot)
			if err != nil {
				t.Fatal(err)
			}
			if out.Title != "b" {
				t.Fatalf("title %q, want the sidecar's", out.Title)
			}
			if got := written(report); !slices.Equal(got, tc.written) {
				t.Errorf("written %q, want %q", got, tc.written)
			}
			if len(report.Overlaps) != tc.overlaps {
				t.Errorf("overlaps %q, want %d", overlaps(report), tc.overlaps)
			}
		})
	}
}

// On a migration target the domain is discarded: overlaps are reported,
// not counted.
func TestOverlapsOnAMigrationTargetAreNotCounted(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	plugins := []pluginv1alpha1.Plugin{plugin("a", celHook(`Domain{Title: "a"}`)), plugin("b", celHook(`Domain{Title: "b"}`))}
	p := newPipeline(t, socketRoot(t), plugins, func(o *pipeline.Options) { o.Registerer = reg })
	_, report, err := p.GuestDefinitionWithReport(t.Context(), testVMI(t), testDomain(t), pipeline.MigrationTarget)
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Overlaps) != 1 {
		t.Errorf("overlaps %q, want b over a", overlaps(report))
	}
	if got := counterValue(t, reg, pipeline.MetricHookOverlaps, map[string]string{"plugin": "b", "overwritten_plugin": "a"}); got != 0 {
		t.Errorf("overlaps counted on a migration target: %v", got)
	}
}

// counterValue is the value of the counter series of name whose labels
// include labels, 0 when there is none.
func counterValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue series
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
