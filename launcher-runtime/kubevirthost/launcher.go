// SPDX-License-Identifier: Apache-2.0

// Package kubevirthost adapts the launcher pipeline to KubeVirt's
// virt-launcher: the few calls virt-launcher makes, in its own terms (the
// domain as the XML it defines, the VMI, the Plugins virt-handler sent in
// its VirtualMachineOptions), with everything else done by
// launcher-runtime/pipeline. virt-launcher keeps one Launcher for its life
// (it runs one VMI) and calls:
//
//   - SetPlugins with VirtualMachineOptions.PluginsJson whenever virt-handler
//     sends it (the data handler-runtime/launcherplugins encodes);
//   - GuestDefinition when it defines the domain at boot, after its legacy
//     hook sidecars;
//   - PreBoot after it wrote the boot artifacts (the cloud-init ISO), right
//     before it starts the domain;
//   - MigrationTarget when it prepares to receive a migration;
//   - MigrateToURI3Args with the flags and parameters it would hand
//     libvirt's MigrateToURI3, in the binding's types (PreMigrationSource
//     takes them in the hook contract's);
//   - after each of these hook point calls, Ignored and TakeHookCounts,
//     whose results it hands virt-handler: the failures skipped under
//     Ignore, for Warning Events, and the hook outcome counts, for
//     virt-handler's metrics (Prometheus does not scrape virt-launcher).
//
// A Launcher handed no Plugin does nothing at any hook point and builds no
// CEL environment: a VM no Plugin selects boots as without the framework.
//
// Errors are the pipeline's *pipeline.HookError, whose text names the
// plugin, the hook and the hook point; virt-launcher returns them to
// virt-handler as it returns its other sync errors.
package kubevirthost

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/kubevirt-plugins/framework/api/handover"
	"github.com/kubevirt-plugins/framework/api/hookresult"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// Options configure a Launcher.
type Options struct {
	// Logger receives what the pipeline logs and one line per set of
	// Plugins handed over. Default: discard.
	Logger logr.Logger
	// Registerer receives the pipeline's metrics. Default: none. The
	// outcome and cost-limit counts are kept for TakeHookCounts either
	// way.
	Registerer prometheus.Registerer
	// Pipeline holds the remaining pipeline options (socket root, budget);
	// its Logger and Registerer are taken from the fields above. Its
	// OnOutcome and OnOverlap, if set, are called before the Launcher
	// counts for TakeHookCounts.
	Pipeline pipeline.Options
}

// Launcher is virt-launcher's side of the framework. It is safe for
// concurrent use; hook point calls run one at a time.
type Launcher struct {
	opts Options
	log  logr.Logger

	mu       sync.Mutex
	data     []byte
	names    []string
	pipeline *pipeline.Pipeline
	// ignored are the failures skipped under Ignore that Ignored has not
	// handed out yet.
	ignored []string

	// counts are the hook outcome counts TakeHookCounts has not handed out
	// yet; they have their own lock.
	counts hookCounts
}

// maxIgnored bounds the failures kept for Ignored between two calls; the
// oldest go first.
const maxIgnored = 32

// New returns a Launcher with no Plugin.
func New(opts Options) *Launcher {
	log := opts.Logger
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	l := &Launcher{log: log, counts: hookCounts{log: log.WithName("hook-counts")}}
	opts.Pipeline.Logger = log.WithName("pipeline")
	opts.Pipeline.Registerer = opts.Registerer
	opts.Pipeline.OnOutcome = hostFirst(opts.Pipeline.OnOutcome, l.counts.add)
	opts.Pipeline.OnOverlap = hostFirst(opts.Pipeline.OnOverlap, l.counts.addOverlap)
	l.opts = opts
	return l
}

// SetPlugins takes the Plugins virt-handler handed over, in the format of
// api/handover. The same data as the last accepted keeps the pipeline and
// its sidecar connections; other data builds a new one. Empty data means
// no Plugin.
func (l *Launcher) SetPlugins(data []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if bytes.Equal(data, l.data) {
		return nil
	}
	plugins, err := handover.Decode(data)
	if err != nil {
		return err
	}
	var p *pipeline.Pipeline
	if len(plugins) > 0 {
		if p, err = pipeline.New(plugins, l.opts.Pipeline); err != nil {
			return fmt.Errorf("building the launcher hook pipeline: %w", err)
		}
	}
	if l.pipeline != nil {
		_ = l.pipeline.Close()
	}
	l.pipeline, l.data = p, bytes.Clone(data)
	l.names = l.names[:0]
	for _, pl := range plugins {
		l.names = append(l.names, pl.Name)
	}
	l.log.Info("Plugins handed over by virt-handler", "plugins", l.names)
	return nil
}

// Plugins names the Plugins the launcher holds now.
func (l *Launcher) Plugins() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.names...)
}

// GuestDefinition runs the GuestDefinition chain at boot on the domain
// virt-launcher is about to define and returns the XML to define. With no
// Plugin it returns domainXML unchanged, without decoding it.
func (l *Launcher) GuestDefinition(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, domainXML string) (string, *pipeline.Report, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pipeline == nil {
		return domainXML, nil, nil
	}
	domain, err := decode(domainXML)
	if err != nil {
		return "", nil, err
	}
	out, report, err := l.pipeline.GuestDefinitionWithReport(ctx, vmi, domain, pipeline.Boot)
	l.keepIgnored(report)
	if err != nil {
		return "", report, err
	}
	x, err := out.Marshal()
	if err != nil {
		return "", report, fmt.Errorf("encoding the domain after GuestDefinition: %w", err)
	}
	return x, report, nil
}

// MigrationTarget runs the GuestDefinition chain with the MigrationTarget
// invocation context, so that sidecars prepare the target Pod; the domain
// they answer is discarded (the one arriving is the source's).
func (l *Launcher) MigrationTarget(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, domainXML string) (*pipeline.Report, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pipeline == nil {
		return nil, nil
	}
	domain, err := decode(domainXML)
	if err != nil {
		return nil, err
	}
	report, err := l.pipeline.MigrationTargetWithReport(ctx, vmi, domain)
	l.keepIgnored(report)
	return report, err
}

// PreBoot runs the PreBoot chain on the boot artifacts: cloudInitISO is the
// path of the VMI's generated cloud-init ISO, empty when it has none.
func (l *Launcher) PreBoot(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, cloudInitISO string) (*pipeline.Report, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pipeline == nil {
		return nil, nil
	}
	report, err := l.pipeline.PreBootWithReport(ctx, vmi, pipeline.Artifacts{CloudInitISO: cloudInitISO})
	l.keepIgnored(report)
	return report, err
}

// PreMigrationSource runs the PreMigrationSource chain on the flags and
// parameters virt-launcher would migrate with and returns those to use.
func (l *Launcher) PreMigrationSource(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, flags uint64, params *hooksv1alpha1.MigrationParams) (*pipeline.MigrationResult, *pipeline.Report, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pipeline == nil {
		return &pipeline.MigrationResult{Flags: flags, Params: params}, nil, nil
	}
	res, report, err := l.pipeline.PreMigrationSourceWithReport(ctx, vmi, flags, params)
	l.keepIgnored(report)
	return res, report, err
}

// IgnoredReason is the reason of the Warning Event virt-launcher sends
// virt-handler for each of Ignored.
const IgnoredReason = pipeline.ReasonLauncherHookFailureIgnored

// Ignored hands out, once, the failures the hook point calls skipped under
// failureStrategy Ignore since the last call, oldest first: each names the
// Plugin, the hook, the hook point and the cause, and says the VM went on
// without the hook's result. virt-launcher sends each to virt-handler as a
// Warning Event on the VMI (IgnoredReason), so that a VM owner sees what
// did not apply.
func (l *Launcher) Ignored() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.ignored
	l.ignored = nil
	return out
}

// keepIgnored keeps the failures of report skipped under Ignore; l.mu is
// held.
func (l *Launcher) keepIgnored(report *pipeline.Report) {
	if report == nil {
		return
	}
	for _, h := range report.Hooks {
		if h.Outcome != hookresult.Ignored || h.Err == nil {
			continue
		}
		l.ignored = append(l.ignored, h.Err.Error()+" ("+hookresult.IgnoredMessage+")")
	}
	if n := len(l.ignored) - maxIgnored; n > 0 {
		l.ignored = slices.Delete(l.ignored, 0, n)
	}
}

// Close releases the sidecar connections.
func (l *Launcher) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pipeline == nil {
		return nil
	}
	err := l.pipeline.Close()
	l.pipeline, l.data = nil, nil
	return err
}

func decode(domainXML string) (*libvirtxml.Domain, error) {
	d := &libvirtxml.Domain{}
	if err := d.Unmarshal(domainXML); err != nil {
		return nil, fmt.Errorf("reading the domain virt-launcher generated: %w", err)
	}
	return d, nil
}

// hostFirst calls the host's callback, if any, then the Launcher's own.
func hostFirst[T any](host, own func(T)) func(T) {
	if host == nil {
		return own
	}
	return func(v T) {
		host(v)
		own(v)
	}
}
