// SPDX-License-Identifier: Apache-2.0

// Package kubevirthost adapts handler-runtime to KubeVirt's virt-handler:
// one Handler, made when virt-handler starts, keeps the Plugin store and
// serves virt-handler's three needs in its own terms:
//
//   - CallNodeHooks at each lifecycle point virt-handler reports, named as
//     KubeVirt v1.9 names them (kubevirt.io/api/plugin/v1alpha1's
//     NodeHookPoint; its PreVMStop is the framework's OnVMStop), with the
//     signature of virt-handler's NodeHookExecutor, and VMStopped when
//     virt-handler removes a stopped VM's domain, which calls the
//     PostVMStop a stop KubeVirt began is still owed (KubeVirt calls it
//     only if one of its syncs sees the VMI final before it is gone);
//   - LauncherPlugins, the data virt-handler sends each virt-launcher in
//     VirtualMachineOptions.PluginsJson (handler-runtime/launcherplugins);
//   - RecordLauncherHookCounts, for what each virt-launcher reports back
//     after its hook point calls: the counts of its launcher hooks'
//     outcomes, added to virt-handler's metrics
//     (handler-runtime/launchermetrics), since Prometheus does not scrape
//     virt-launcher; LauncherReports takes them from the Events
//     virt-launcher sends, KubeVirt's one channel to virt-handler.
//
// The Plugins come from the framework's Plugin CRD (spec.launcherHooks,
// spec.nodeHooks), watched by handler-runtime/store; the node hooks are
// called by handler-runtime/dispatch, which also writes their Warning
// Events on the VMI and records their metrics.
package kubevirthost

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	kubevirtv1 "kubevirt.io/api/core/v1"
	kvplugin "kubevirt.io/api/plugin/v1alpha1"

	"github.com/kubevirt-plugins/framework/api/celenv"
	"github.com/kubevirt-plugins/framework/api/hookcounts"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/handler-runtime/dispatch"
	"github.com/kubevirt-plugins/framework/handler-runtime/launchermetrics"
	"github.com/kubevirt-plugins/framework/handler-runtime/launcherplugins"
	"github.com/kubevirt-plugins/framework/handler-runtime/store"
)

// Options configure a Handler.
type Options struct {
	// Config reaches the API server (virt-handler's own). Required unless
	// Plugins is set.
	Config *rest.Config
	// Plugins is the Plugin store to use instead of one made from Config
	// (tests). The caller runs it.
	Plugins *store.Store
	// FeatureGate reports whether KubeVirt's Plugins feature gate is on;
	// asked at every hook point. Default: on.
	FeatureGate func() bool
	// EventRecorder receives the node hook Warning Events on VMIs.
	// Default: none.
	EventRecorder record.EventRecorder
	// Registerer receives the dispatch metrics and the launcher hook
	// series the launchers report (handler-runtime/launchermetrics).
	// Default: none.
	Registerer prometheus.Registerer
	// Logger receives the store's and the dispatcher's lines. Default:
	// discard.
	Logger logr.Logger
	// SocketRoots are the directories node hook sockets must lie under.
	// Default: dispatch's (pluginv1alpha1.NodeHookSocketsRoot).
	SocketRoots []string
}

// Handler is virt-handler's side of the framework. Safe for concurrent use.
type Handler struct {
	plugins   *store.Store
	ownStore  bool
	hooks     *dispatch.Dispatcher
	launchers *launcherplugins.Selector
	counts    *launchermetrics.Counters
	log       logr.Logger

	stopsMu sync.Mutex
	stops   owedStops
}

// New makes a Handler; Run starts its Plugin store.
func New(opts Options) (*Handler, error) {
	log := opts.Logger
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	h := &Handler{plugins: opts.Plugins, log: log}
	if h.plugins == nil {
		if opts.Config == nil {
			return nil, errors.New("kubevirthost: one of Options.Config or Options.Plugins is required")
		}
		s, err := store.New(store.Options{Config: opts.Config, FeatureGate: opts.FeatureGate, Logger: log.WithName("plugin-store")})
		if err != nil {
			return nil, err
		}
		h.plugins, h.ownStore = s, true
	}
	env, err := celenv.New(celenv.Options{})
	if err != nil {
		return nil, err
	}
	h.hooks, err = dispatch.New(dispatch.Options{
		Plugins: h.plugins, CEL: env, SocketRoots: opts.SocketRoots, Registerer: opts.Registerer,
		Logger: log.WithName("node-hooks"), EventRecorder: opts.EventRecorder,
	})
	if err != nil {
		return nil, err
	}
	h.launchers, err = launcherplugins.New(launcherplugins.Options{Plugins: h.plugins, CEL: env})
	if err != nil {
		_ = h.hooks.Close()
		return nil, err
	}
	h.counts, err = launchermetrics.New(launchermetrics.Options{Plugins: h.plugins, Registerer: opts.Registerer})
	if err != nil {
		_ = h.hooks.Close()
		return nil, err
	}
	return h, nil
}

// Run watches the Plugins until ctx ends (only for the store New made).
// It does not wait for the first list: until then, with the feature gate
// on, hook points and LauncherPlugins fail with store.ErrNotSynced, so no
// VMI starts without the Plugins that select it.
func (h *Handler) Run(ctx context.Context) {
	if h.ownStore {
		go func() {
			if err := h.plugins.Run(ctx); err != nil && ctx.Err() == nil {
				h.log.Error(err, "the Plugin store stopped")
			}
		}()
	}
	go func() {
		<-ctx.Done()
		_ = h.hooks.Close()
	}()
}

// WaitForSync waits until the Plugin store has its first list, or ctx ends.
func (h *Handler) WaitForSync(ctx context.Context) bool {
	return h.plugins.WaitForSync(ctx)
}

// hookPoints maps KubeVirt v1.9's names of its lifecycle points to the
// framework's node hook points.
var hookPoints = map[kvplugin.NodeHookPoint]pluginv1alpha1.NodeHookPoint{
	kvplugin.NodeHookPreVMStart:          pluginv1alpha1.PreVMStart,
	kvplugin.NodeHookPostVMStart:         pluginv1alpha1.PostVMStart,
	kvplugin.NodeHookPreVMStop:           pluginv1alpha1.OnVMStop,
	kvplugin.NodeHookPostVMStop:          pluginv1alpha1.PostVMStop,
	kvplugin.NodeHookPreMigrationSource:  pluginv1alpha1.NodePreMigrationSource,
	kvplugin.NodeHookPreMigrationTarget:  pluginv1alpha1.PreMigrationTarget,
	kvplugin.NodeHookPostMigrationTarget: pluginv1alpha1.PostMigrationTarget,
}

// HookPoint is the framework's node hook point for one of virt-handler's
// lifecycle points, and whether there is one.
func HookPoint(point kvplugin.NodeHookPoint) (pluginv1alpha1.NodeHookPoint, bool) {
	p, ok := hookPoints[point]
	return p, ok
}

// CallNodeHooks dispatches the node hooks of point for vmi on node
// nodeName: virt-handler's NodeHookExecutor. The error, when a hook under
// failureStrategy Fail failed, is a *dispatch.HookError naming it.
// OnVMStop and PostVMStop are also noted for VMStopped.
func (h *Handler) CallNodeHooks(point kvplugin.NodeHookPoint, vmi *kubevirtv1.VirtualMachineInstance, nodeName string) error {
	p, ok := HookPoint(point)
	if !ok {
		return fmt.Errorf("node hooks for VMI %s/%s: virt-handler reported lifecycle point %q, which has no node hook point", vmi.Namespace, vmi.Name, point)
	}
	h.trackStop(p, vmi)
	return h.hooks.Dispatch(context.Background(), p, vmi, dispatch.NodeContext{NodeName: nodeName})
}

// LauncherPlugins is what virt-handler sends the launcher of vmi in
// VirtualMachineOptions.PluginsJson.
func (h *Handler) LauncherPlugins(vmi *kubevirtv1.VirtualMachineInstance) ([]byte, error) {
	lp, err := h.launchers.LauncherPlugins(vmi)
	if err != nil {
		return nil, err
	}
	return lp.Data, nil
}

// RecordLauncherHookCounts adds to virt-handler's launcher hook series
// (kubevirt_plugins_launcher_hook_outcomes_total,
// kubevirt_plugins_launcher_hook_cel_cost_limit_exceeded_total,
// kubevirt_plugins_launcher_hook_duration_seconds and
// kubevirt_plugins_launcher_hook_overlaps_total, on Options.Registerer)
// the counts the launcher of vmi reported: the bytes
// its TakeHookCounts returned (launcher-runtime/kubevirthost), which
// virt-launcher sends after each hook point call with its reply, as it
// sends the failures its hooks skipped under Ignore. Empty data records
// nothing. A report that is malformed, of another version, beyond the
// bounds of api/hookcounts or naming a Plugin the store does not hold is
// refused whole, with an error naming the VMI, the field and the cause;
// virt-handler logs it and goes on (the VM is not affected).
func (h *Handler) RecordLauncherHookCounts(vmi *kubevirtv1.VirtualMachineInstance, data []byte) error {
	return h.counts.Record(vmi, data)
}

// LauncherReports returns the EventRecorder for the Events virt-launchers
// send virt-handler through KubeVirt's launcher-to-handler channel (its
// domain notify server): an Event on a VMI whose reason is
// hookcounts.EventReason carries a launcher's hook counts, which it
// records with RecordLauncherHookCounts and does not pass on (a refused
// report is logged; the VM is not affected); every other Event goes to
// next unchanged.
func (h *Handler) LauncherReports(next record.EventRecorder) record.EventRecorder {
	return &launcherReports{EventRecorder: next, h: h}
}

type launcherReports struct {
	record.EventRecorder
	h *Handler
}

// report records message when reason says it is a launcher's report.
func (r *launcherReports) report(object runtime.Object, reason, message string) bool {
	if reason != hookcounts.EventReason {
		return false
	}
	vmi, ok := object.(*kubevirtv1.VirtualMachineInstance)
	if !ok {
		r.h.log.Info("launcher hook counts on an object that is not a VMI, dropped", "type", fmt.Sprintf("%T", object))
		return true
	}
	if err := r.h.RecordLauncherHookCounts(vmi, []byte(message)); err != nil {
		r.h.log.Error(err, "launcher hook counts refused")
	}
	return true
}

func (r *launcherReports) Event(object runtime.Object, eventtype, reason, message string) {
	if !r.report(object, reason, message) {
		r.EventRecorder.Event(object, eventtype, reason, message)
	}
}

func (r *launcherReports) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	if !r.report(object, reason, fmt.Sprintf(messageFmt, args...)) {
		r.EventRecorder.Eventf(object, eventtype, reason, messageFmt, args...)
	}
}

func (r *launcherReports) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	if !r.report(object, reason, fmt.Sprintf(messageFmt, args...)) {
		r.EventRecorder.AnnotatedEventf(object, annotations, eventtype, reason, messageFmt, args...)
	}
}
