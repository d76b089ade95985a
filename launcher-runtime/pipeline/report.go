// SPDX-License-Identifier: Apache-2.0

package pipeline

import (
	"context"
	"encoding/json"
	"time"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/kubevirt-plugins/framework/api/hookresult"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// Reasons for the Warning Events a host writes on the VMI for the failed
// hooks of a Report (Report.Failed), the launcher's pair of
// handler-runtime/dispatch's NodeHookFailed and NodeHookFailureIgnored.
const (
	// ReasonLauncherHookFailed: outcome hookresult.Error, the call failed.
	ReasonLauncherHookFailed = "LauncherHookFailed"
	// ReasonLauncherHookFailureIgnored: outcome hookresult.Ignored, the
	// chain went on.
	ReasonLauncherHookFailureIgnored = "LauncherHookFailureIgnored"
)

// Report is what one hook point call did, hook by hook. The *WithReport
// methods return it with their result, also when the call fails. It is a
// value for the host to pass on: virt-launcher has no API credentials (see
// the package documentation, "Reports"); it encodes to JSON.
type Report struct {
	// HookPoint is the hook point called.
	HookPoint pluginv1alpha1.LauncherHookPoint `json:"hookPoint"`
	// Hooks are the hooks that handle the hook point, in the order the
	// chain reached them, each with its outcome; a failure that ended the
	// call is the last. A plugin condition that could not be evaluated
	// is an entry of Scope hookresult.ScopePlugin.
	Hooks []HookReport `json:"hooks"`
	// Changed are the parts of the domain the hooks changed, each with the
	// last hook that changed it, in the order of their last change
	// (GuestDefinition; sidecars only when tracked, see HookReport).
	Changed []Change `json:"changed,omitempty"`
	// Overlaps are the parts of the domain a hook changed after a hook of
	// another plugin had, in the order found (GuestDefinition).
	Overlaps []Overlap `json:"overlaps,omitempty"`
}

// Failed returns the hooks that failed: outcome hookresult.Error or
// hookresult.Ignored.
func (r *Report) Failed() []HookReport {
	var out []HookReport
	for _, h := range r.Hooks {
		if h.Outcome.Failed() {
			out = append(out, h)
		}
	}
	return out
}

// HookReport is what one hook did in a hook point call.
type HookReport struct {
	HookRef
	// Outcome is hookresult.Success (applied), Skipped (its plugin's or
	// its own condition was false), Ignored (failed under failureStrategy
	// Ignore, the chain went on without its result) or Error (failed, and
	// the call with it).
	Outcome hookresult.Outcome
	// Duration is the time the hook took, conditions included; zero for a
	// skipped hook.
	Duration time.Duration
	// SocketWait is the part of Duration a sidecar hook spent before its
	// call: waiting for the socket to accept a connection and dialing it.
	// It is zero for a CEL hook and for a call made on a connection kept
	// from an earlier call.
	SocketWait time.Duration
	// Err is the *HookError of a failed hook (Ignored, Error); nil
	// otherwise.
	Err error
	// Written are the parts of the domain the hook changed, at
	// GuestDefinition: paths of Go field names from Domain ("CPU.Mode",
	// "Devices.Disks[1].Driver.Cache"); "" is the whole domain. A CEL
	// hook's come from its merge; a sidecar's from comparing the domain it
	// was given with its answer, when sidecars are tracked
	// (Options.TrackSidecarWrites).
	Written []string
	// WrittenKnown is false for a sidecar hook whose answer was not
	// compared (Written is then empty whatever it changed), and at the
	// other hook points.
	WrittenKnown bool
}

// MarshalJSON encodes the hook with its duration as a Go duration string
// and its error as its text.
func (h HookReport) MarshalJSON() ([]byte, error) {
	out := struct {
		Plugin       string             `json:"plugin"`
		Scope        hookresult.Scope   `json:"scope,omitempty"`
		HookIndex    int                `json:"hookIndex"`
		Kind         HookKind           `json:"kind,omitempty"`
		Outcome      hookresult.Outcome `json:"outcome"`
		Duration     string             `json:"duration"`
		SocketWait   string             `json:"socketWait,omitempty"`
		Error        string             `json:"error,omitempty"`
		Written      []string           `json:"written,omitempty"`
		WrittenKnown bool               `json:"writtenKnown,omitempty"`
	}{h.Plugin, h.Scope, h.HookIndex, h.Kind, h.Outcome, h.Duration.String(), "", "", h.Written, h.WrittenKnown}
	if h.SocketWait > 0 {
		out.SocketWait = h.SocketWait.String()
	}
	if h.Err != nil {
		out.Error = h.Err.Error()
	}
	return json.Marshal(out)
}

// Change is a part of the domain and the last hook that changed it.
type Change struct {
	Path string  `json:"path"`
	Hook HookRef `json:"hook"`
}

// observe counts the outcome of hook h of plugin pl (nil for the plugin's
// condition) and, when a report is kept, adds the hook to it.
func (c *call) observe(pl *compiledPlugin, h *compiledHook, outcome hookresult.Outcome, took time.Duration, err error) {
	c.count(pl.name, outcome, took, err)
	waited := c.socketWait
	c.socketWait = 0
	if c.report == nil {
		return
	}
	hr := HookReport{HookRef: HookRef{Plugin: pl.name, Scope: hookresult.ScopePlugin, HookIndex: PluginCondition}, Outcome: outcome, Duration: took, SocketWait: waited, Err: err}
	if h != nil {
		hr.Scope, hr.HookIndex, hr.Kind = hookresult.ScopeHook, h.index, h.kind()
	}
	if pr := c.prov; pr != nil {
		if outcome == hookresult.Success {
			hr.Written, hr.WrittenKnown = pr.written, pr.writtenKnown
		}
		pr.written, pr.writtenKnown = nil, false
	}
	c.report.Hooks = append(c.report.Hooks, hr)
}

// observeLate counts the failure of a hook found after it was counted a
// success (a sidecar's answer that does not decode) and corrects its entry
// in the report.
func (c *call) observeLate(pl *compiledPlugin, h *compiledHook, outcome hookresult.Outcome, err error) {
	c.count(pl.name, outcome, 0, err)
	if c.report == nil {
		return
	}
	for i := len(c.report.Hooks) - 1; i >= 0; i-- {
		hr := &c.report.Hooks[i]
		if hr.Plugin == pl.name && hr.Scope == hookresult.ScopeHook && hr.HookIndex == h.index {
			hr.Outcome, hr.Err, hr.Written, hr.WrittenKnown = outcome, err, nil, false
			return
		}
	}
}

// GuestDefinitionWithReport is GuestDefinition, also returning what each
// hook did and changed, and the overlaps between plugins.
func (p *Pipeline) GuestDefinitionWithReport(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, domain *libvirtxml.Domain, ic InvocationContext) (*libvirtxml.Domain, *Report, error) {
	r := &Report{HookPoint: pluginv1alpha1.GuestDefinition}
	out, err := p.guestDefinition(ctx, vmi, domain, ic, r)
	return out, r, err
}

// PreBootWithReport is PreBoot, also returning what each hook did.
func (p *Pipeline) PreBootWithReport(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, artifacts Artifacts) (*Report, error) {
	r := &Report{HookPoint: pluginv1alpha1.PreBoot}
	return r, p.preBoot(ctx, vmi, artifacts, r)
}

// PreMigrationSourceWithReport is PreMigrationSource, also returning what
// each hook did.
func (p *Pipeline) PreMigrationSourceWithReport(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, flags uint64, params *hooksv1alpha1.MigrationParams) (*MigrationResult, *Report, error) {
	r := &Report{HookPoint: pluginv1alpha1.PreMigrationSource}
	res, err := p.preMigrationSource(ctx, vmi, flags, params, r)
	return res, r, err
}

// BootWithReport is Boot, also returning the report of each hook point it
// called: GuestDefinition, then PreBoot unless GuestDefinition failed.
func (p *Pipeline) BootWithReport(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, domain *libvirtxml.Domain, artifacts Artifacts) (*libvirtxml.Domain, []*Report, error) {
	out, gd, err := p.GuestDefinitionWithReport(ctx, vmi, domain, Boot)
	if err != nil {
		return nil, []*Report{gd}, err
	}
	pb, err := p.PreBootWithReport(ctx, vmi, artifacts)
	if err != nil {
		return nil, []*Report{gd, pb}, err
	}
	return out, []*Report{gd, pb}, nil
}

// MigrationTargetWithReport is MigrationTarget, also returning the report
// of GuestDefinition.
func (p *Pipeline) MigrationTargetWithReport(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, domain *libvirtxml.Domain) (*Report, error) {
	_, r, err := p.GuestDefinitionWithReport(ctx, vmi, domain, MigrationTarget)
	return r, err
}

// MigrationSourceWithReport is MigrationSource, also returning the report
// of PreMigrationSource.
//
// Deprecated: call PreMigrationSourceWithReport, which it only calls.
func (p *Pipeline) MigrationSourceWithReport(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, flags uint64, params *hooksv1alpha1.MigrationParams) (*MigrationResult, *Report, error) {
	return p.PreMigrationSourceWithReport(ctx, vmi, flags, params)
}
