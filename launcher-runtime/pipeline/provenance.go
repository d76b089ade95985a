// SPDX-License-Identifier: Apache-2.0

package pipeline

import (
	"context"
	"fmt"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/kubevirt-plugins/framework/api/hookresult"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/launcher-runtime/internal/domainpath"
)

// HookRef names one launcher hook of a Plugin.
type HookRef struct {
	// Plugin is the Plugin's name.
	Plugin string `json:"plugin"`
	// Scope is hookresult.ScopeHook for a hook (omitted in JSON), and
	// hookresult.ScopePlugin for the plugin's condition.
	Scope hookresult.Scope `json:"scope,omitempty"`
	// HookIndex is the hook's index in spec.launcherHooks; for the
	// plugin's condition, the deprecated PluginCondition.
	HookIndex int `json:"hookIndex"`
	// Kind is the hook's kind; empty for the plugin's condition.
	Kind HookKind `json:"kind,omitempty"`
}

func (r HookRef) String() string {
	return fmt.Sprintf("plugin %q launcher hook #%d (%s)", r.Plugin, r.HookIndex, r.Kind)
}

// Overlap is a part of the domain that a GuestDefinition hook changed after
// a hook of another plugin had changed it, or a part holding it or held by
// it ("CPU" and "CPU.Mode"), in the same call. Plugins run in a fixed order
// and the later value is the one kept: an overlap is not an error, it tells
// who overwrote whom.
type Overlap struct {
	// Path is the part the later hook changed.
	Path string `json:"path"`
	// OverwrittenPath is the part the earlier hook had changed: Path, or a
	// part holding it or held by it.
	OverwrittenPath string `json:"overwrittenPath"`
	// Hook is the later hook, whose value is kept.
	Hook HookRef `json:"hook"`
	// Overwritten is the earlier hook, of another plugin.
	Overwritten HookRef `json:"overwritten"`
}

func (o Overlap) String() string {
	s := fmt.Sprintf("%s overwrote %s, written by %s", o.Hook, pathName(o.Path), o.Overwritten)
	if o.OverwrittenPath != o.Path {
		s += " at " + pathName(o.OverwrittenPath)
	}
	return s
}

// pathName shows a written path; the empty one is the whole domain.
func pathName(p string) string {
	if p == "" {
		return "the whole domain"
	}
	return p
}

// pathWrite is the last hook that changed a part of the domain in a call.
type pathWrite struct {
	path string
	by   HookRef
}

// provenance is the bookkeeping of one GuestDefinition call: which hook
// changed which part of the domain. A CEL hook's paths come from its merge
// (celenv.DomainTransform.MergeWritten), at the cost of its literal; a
// sidecar answers a whole domain, which is compared with what it was given
// only when sidecars are tracked (Options.TrackSidecarWrites, or a Logger
// enabled at V(1)), because that decodes every answer.
type provenance struct {
	// countOverlaps is false where the domain is discarded (the migration
	// target): overlaps there are reported, not counted or logged.
	countOverlaps bool
	trackSidecars bool
	writes        []pathWrite
	// written is what the hook running changed, for its HookReport;
	// writtenKnown is false for a sidecar whose answer was not compared.
	written      []string
	writtenKnown bool
	// buf holds the writes of short chains, saving an allocation.
	buf [4]pathWrite
}

// trackSidecars says whether GuestDefinition compares the domain before and
// after each sidecar.
func (p *Pipeline) trackSidecars() bool {
	return p.opts.TrackSidecarWrites || p.log.V(1).Enabled()
}

// wrote records that hook h of plugin pl changed paths: it finds the
// overlaps with what hooks of other plugins changed earlier in the call and
// counts and logs them. tracked is false for a sidecar whose answer was not
// compared.
func (c *call) wrote(pl *compiledPlugin, h *compiledHook, paths []string, tracked bool) {
	pr := c.prov
	if pr == nil {
		return
	}
	if pr.writes == nil {
		pr.writes = pr.buf[:0]
	}
	pr.written, pr.writtenKnown = paths, tracked
	by := HookRef{Plugin: pl.name, HookIndex: h.index, Kind: h.kind()}
	for _, p := range paths {
		kept := pr.writes[:0]
		for _, w := range pr.writes {
			if w.by.Plugin != by.Plugin && domainpath.Overlap(w.path, p) {
				c.overlap(Overlap{Path: p, OverwrittenPath: w.path, Hook: by, Overwritten: w.by})
			}
			// A part p holds is wholly replaced: later writes overlap
			// with p's writer, not with the one before.
			if !domainpath.Overlap(p, w.path) || len(w.path) < len(p) {
				kept = append(kept, w)
			}
		}
		pr.writes = append(kept, pathWrite{path: p, by: by})
	}
}

func (c *call) overlap(o Overlap) {
	pr := c.prov
	if c.report != nil {
		c.report.Overlaps = append(c.report.Overlaps, o)
	}
	if !pr.countOverlaps {
		return
	}
	c.p.metrics.overlapped(string(c.point), o)
	if f := c.p.opts.OnOverlap; f != nil {
		f(CountedOverlap{HookPoint: c.point, Plugin: o.Hook.Plugin, OverwrittenPlugin: o.Overwritten.Plugin})
	}
	c.p.log.Info("domain changed by two plugins; the later one's value is kept",
		"plugin", o.Hook.Plugin, "hookIndex", o.Hook.HookIndex, "path", pathName(o.Path),
		"overwrittenPlugin", o.Overwritten.Plugin, "overwrittenHookIndex", o.Overwritten.HookIndex,
		"overwrittenPath", pathName(o.OverwrittenPath), "hookPoint", string(c.point))
}

// applyWritten returns domain with the expression's result merged into it,
// and the paths of the domain the expression changed. domain itself is
// never modified (the chain hands its input on to later hooks and may
// return it unchanged), so an ignored failure leaves no trace. The result is
// new only along the paths the expression writes and shares the rest with
// domain (celenv.DomainTransform.MergeWritten): the chain treats domains as
// read-only.
// The paths are listed only when paths is true.
func (t transform) applyWritten(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, domain *libvirtxml.Domain, paths bool) (*libvirtxml.Domain, []string, error) {
	if !paths {
		next, err := t.program.Merge(ctx, vmi, domain)
		return next, nil, err
	}
	return t.program.MergeWritten(ctx, vmi, domain)
}

// pluginsAt counts the plugins with a hook at point.
func (p *Pipeline) pluginsAt(point pluginv1alpha1.LauncherHookPoint) int {
	n := 0
	for i := range p.plugins {
		for j := range p.plugins[i].hooks {
			if p.plugins[i].hooks[j].hook.Handles(point) {
				n++
				break
			}
		}
	}
	return n
}

// changes lists the parts changed in the call and their last writers.
func (pr *provenance) changes() []Change {
	out := make([]Change, 0, len(pr.writes))
	for _, w := range pr.writes {
		out = append(out, Change{Path: w.path, Hook: w.by})
	}
	return out
}
