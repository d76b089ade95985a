// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubevirt-plugins/framework/api/celenv"
	"github.com/kubevirt-plugins/framework/api/hookresult"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/api/socketpath"
	"github.com/kubevirt-plugins/framework/handler-runtime/internal/connpool"
	"github.com/kubevirt-plugins/framework/handler-runtime/internal/keyedlock"
	"github.com/kubevirt-plugins/framework/handler-runtime/store"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// DefaultSocketRoot is where node hook sockets may lie unless the host
// allows other roots: pluginv1alpha1.NodeHookSocketsRoot, the host path
// virt-handler mounts, with a trailing "/".
const DefaultSocketRoot = pluginv1alpha1.NodeHookSocketsRoot + "/"

// DefaultMaxInFlightPerSocket bounds concurrent calls to one node hook server.
const DefaultMaxInFlightPerSocket = connpool.DefaultMaxInFlight

// PluginSource provides the Plugins to dispatch to. *store.Store is one.
// Snapshot revisions must only grow, as the store's do: connections are
// pruned for a revision newer than the last one pruned.
type PluginSource interface {
	Snapshot() (store.Snapshot, error)
}

var _ PluginSource = (*store.Store)(nil)

// NodeContext describes the node the dispatch happens on.
type NodeContext struct {
	// NodeName is the Kubernetes node name.
	NodeName string
}

// Options configures a Dispatcher.
type Options struct {
	// Plugins is where the Plugins come from. Required.
	Plugins PluginSource
	// CEL compiles and evaluates conditions; share the launcher's and the
	// controller's settings. Default: celenv.New with its defaults.
	CEL *celenv.Env
	// SocketRoots are the directories node hook sockets must lie under,
	// with no symlink in any component below the root. Default:
	// []string{DefaultSocketRoot}.
	SocketRoots []string
	// MaxInFlightPerSocket bounds the calls in flight to one node hook
	// server. Dispatches for different VMIs run concurrently; the bound is
	// per socket so that a slow server holds up only the VMIs whose hooks
	// call it. Default DefaultMaxInFlightPerSocket.
	MaxInFlightPerSocket int
	// Registerer receives the dispatch metrics. Default: none, metrics
	// are kept but not exported.
	Registerer prometheus.Registerer
	// Logger receives, as api/hookresult says (as the launcher's pipeline
	// does), every failure let through by failureStrategy Ignore, with
	// Error, and at V(1) every hook called that succeeded. Default:
	// discard.
	Logger logr.Logger
	// EventRecorder, when set, receives a Warning Event on the VMI for
	// every node hook that failed, ignored or not (reasons
	// ReasonNodeHookFailed, ReasonNodeHookFailureIgnored), naming the
	// plugin, the hook, the hook point and the error: at most one per VMI
	// and plugin per EventInterval, the failures in between counted in the
	// next one. Its scheme must know kubevirt.io/v1. Default: nil, no
	// Events.
	EventRecorder record.EventRecorder
	// EventInterval is the shortest time between two Events for one VMI
	// and plugin. Default: DefaultEventInterval (10 minutes).
	EventInterval time.Duration
	// Clock measures the durations of calls, dispatches and waits for a
	// VMI's dispatch in progress (metrics, logs) and times EventInterval.
	// Hook timeouts are context deadlines and follow the real clock.
	// Default: the real clock.
	Clock clock.PassiveClock
}

// caller runs a gRPC call on a connection to a socket path.
type caller interface {
	Call(ctx context.Context, path string, fn func(context.Context, grpc.ClientConnInterface) error) error
}

// Dispatcher calls node hooks. It is safe for concurrent use.
type Dispatcher struct {
	plugins PluginSource
	cel     *celenv.Env
	sockets *socketpath.Roots
	pool    *connpool.Pool
	call    caller // the pool, except in comparisons of connection strategies
	metrics *metrics
	log     logr.Logger
	clock   clock.PassiveClock
	events  *eventWriter
	// locks orders the dispatches of one VMI, whatever their hook point.
	locks keyedlock.Locks[string]

	pruneMu        sync.Mutex
	prunedRevision atomic.Uint64 // written under pruneMu
}

// New creates a Dispatcher. Close it to release its connections.
func New(opts Options) (*Dispatcher, error) {
	if opts.Plugins == nil {
		return nil, errors.New("dispatch: Options.Plugins is required")
	}
	if opts.CEL == nil {
		env, err := celenv.New(celenv.Options{})
		if err != nil {
			return nil, fmt.Errorf("dispatch: creating the CEL environment: %w", err)
		}
		opts.CEL = env
	}
	if len(opts.SocketRoots) == 0 {
		opts.SocketRoots = []string{DefaultSocketRoot}
	}
	checker, err := socketpath.NewRoots(opts.SocketRoots)
	if err != nil {
		return nil, fmt.Errorf("dispatch: %w", err)
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("dispatch: %w", err)
	}
	log := opts.Logger
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	// Connections are keyed by the socket as Plugins declare it.
	pool := connpool.New(connpool.Options{MaxInFlight: opts.MaxInFlightPerSocket, Dial: checkedDial(checker)})
	return &Dispatcher{
		plugins: opts.Plugins, cel: opts.CEL, sockets: checker,
		pool: pool, call: pool, metrics: m, log: log, clock: opts.Clock, events: newEventWriter(opts),
	}, nil
}

// checkedDial returns a dial function for the connection pool whose
// connections reach their socket only through checker: every connect(2),
// gRPC's reconnects included, goes through the checked dial of
// api/socketpath rather than to a path checked earlier.
func checkedDial(checker *socketpath.Roots) func(socket string, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	return func(socket string, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
		opts = append([]grpc.DialOption{
			grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
				return checker.Dial(ctx, socket)
			}),
			grpc.WithTransportCredentials(insecure.NewCredentials()),
		}, opts...)
		return grpc.NewClient("passthrough:///"+socket, opts...)
	}
}

// Close closes the pooled connections. Dispatches after Close fail.
func (d *Dispatcher) Close() error {
	return d.pool.Close()
}

// Dispatch calls, in order, every node hook selected for hookPoint and vmi,
// and returns the first failure of a hook whose failureStrategy is Fail,
// or of any condition. With the feature gate off it calls nothing.
//
// Dispatches of one VMI run one after the other, whatever their hook
// points: a dispatch that starts while another of the same VMI runs (an
// OnVMStop while PreVMStart's hooks are still being called) waits until
// that one has returned, or until its own ctx ends, in which case it fails
// without calling any hook. The Plugins are read once the wait is over, so
// a dispatch acts on the Plugins as they are when its hooks are called.
func (d *Dispatcher) Dispatch(ctx context.Context, hookPoint pluginv1alpha1.NodeHookPoint,
	vmi *kubevirtv1.VirtualMachineInstance, nodeContext NodeContext) (err error) {
	if vmi == nil {
		return fmt.Errorf("dispatching node hook point %s: no VMI given", hookPoint)
	}
	if !isNodeHookPoint(hookPoint) {
		return fmt.Errorf("dispatching for VMI %s/%s: unknown node hook point %q", vmi.Namespace, vmi.Name, hookPoint)
	}
	start := d.clock.Now()
	unlock, err := d.locks.Lock(ctx, lockKey(vmi))
	d.metrics.vmiWait.WithLabelValues(string(hookPoint)).Observe(d.clock.Since(start).Seconds())
	if err != nil {
		return fmt.Errorf("dispatching node hook point %s for VMI %s/%s: waiting for the VMI's dispatch in progress: %w",
			hookPoint, vmi.Namespace, vmi.Name, err)
	}
	defer unlock()

	snap, err := d.plugins.Snapshot()
	if err != nil {
		return fmt.Errorf("dispatching node hook point %s for VMI %s/%s: %w", hookPoint, vmi.Namespace, vmi.Name, err)
	}
	if hookPoint == pluginv1alpha1.PreVMStart {
		if err := d.checkRequired(ctx, vmi, snap); err != nil {
			return err
		}
	}
	if !snap.Enabled {
		return nil
	}
	d.prune(snap)

	point := string(hookPoint)
	d.metrics.inFlight.WithLabelValues(point).Inc()
	defer func() {
		d.metrics.inFlight.WithLabelValues(point).Dec()
		outcome := OutcomeSuccess
		if err != nil {
			outcome = OutcomeError
		}
		// From the call of Dispatch: the wait for the VMI's previous
		// dispatch is part of what the host waited.
		d.metrics.dispatchDuration.WithLabelValues(point, outcome).Observe(d.clock.Since(start).Seconds())
	}()

	hooks, err := selectHooks(ctx, snap.Plugins, hookPoint, vmi, d.holds)
	if err != nil {
		d.metrics.conditionFailed(hookPoint, err)
	}
	if err != nil || len(hooks) == 0 {
		d.events.failed(vmi, err, hookresult.Error)
		return err
	}
	vmiJSON, err := json.Marshal(vmi)
	if err != nil {
		return fmt.Errorf("dispatching node hook point %s for VMI %s/%s: encoding the VMI: %w", hookPoint, vmi.Namespace, vmi.Name, err)
	}
	req := &hooksv1alpha1.ExecuteNodeHookRequest{
		HookPoint:   point,
		Vmi:         vmiJSON,
		NodeContext: &hooksv1alpha1.NodeContext{NodeName: nodeContext.NodeName},
	}
	for _, h := range hooks {
		took, callErr := d.execute(ctx, h, hookPoint, req)
		if callErr == nil {
			if log := d.log.V(hookresult.HookLogV); log.Enabled() {
				log.Info("node hook done", hookKeys(h, point, vmi, hookresult.Success, took)...)
			}
			continue
		}
		herr := &HookError{Plugin: h.plugin.Name, HookIndex: h.index, HookPoint: hookPoint, Socket: h.hook.Socket, Err: callErr}
		if h.hook.EffectiveFailureStrategy() == pluginv1alpha1.Ignore && ctx.Err() == nil {
			d.metrics.ignoredFailures.WithLabelValues(h.plugin.Name, point).Inc()
			d.log.Error(herr, hookresult.IgnoredMessage, hookKeys(h, point, vmi, hookresult.Ignored, took)...)
			d.events.failed(vmi, herr, hookresult.Ignored)
			continue
		}
		d.events.failed(vmi, herr, hookresult.Error)
		return herr
	}
	return nil
}

// hookKeys are the keys and values of a line about hook h (api/hookresult,
// "Logging").
func hookKeys(h selected, point string, vmi *kubevirtv1.VirtualMachineInstance, outcome hookresult.Outcome, took time.Duration) []any {
	return []any{hookresult.KeyPlugin, h.plugin.Name, hookresult.KeyHookIndex, h.index, hookresult.KeyHookPoint, point,
		"vmi", vmi.Namespace + "/" + vmi.Name, hookresult.KeyOutcome, outcome, hookresult.KeyDuration, took}
}

// execute makes one hook call within the hook's timeout, which covers the
// wait for a free slot on the socket as well as the call itself, and
// returns how long it took.
func (d *Dispatcher) execute(ctx context.Context, h selected, point pluginv1alpha1.NodeHookPoint,
	req *hooksv1alpha1.ExecuteNodeHookRequest) (took time.Duration, err error) {
	timeout := h.hook.EffectiveTimeout()
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := d.clock.Now()
	defer func() {
		label := OutcomeSuccess
		switch {
		case err != nil && errors.Is(err, ErrHookTimeout):
			label = OutcomeTimeout
		case err != nil:
			label = OutcomeError
		}
		took = d.clock.Since(start)
		d.metrics.callDuration.WithLabelValues(h.plugin.Name, string(point), label).Observe(took.Seconds())
	}()

	// Checked before a pooled connection is used, so that a socket that is
	// gone or refused fails the call with the reason rather than with
	// gRPC's unavailable.
	if _, err = d.sockets.Check(h.hook.Socket); err != nil {
		return 0, err
	}
	err = d.call.Call(callCtx, h.hook.Socket, func(ctx context.Context, cc grpc.ClientConnInterface) error {
		_, err := hooksv1alpha1.NewNodeHookServiceClient(cc).ExecuteNodeHook(ctx, req)
		return err
	})
	err = boundServerMessage(err)
	if err != nil && ctx.Err() == nil && timedOut(callCtx, err) {
		return 0, fmt.Errorf("%w after %s: %w", ErrHookTimeout, timeout, err)
	}
	return 0, err
}

// timedOut reports whether a call on callCtx ended with err because its
// deadline passed. The server enforces the deadline gRPC sends it, and on
// a loaded node its reset can arrive before the client's own timer has
// marked callCtx done: a DeadlineExceeded status at or after the deadline
// counts as well. One the server returns earlier is its own error. The
// deadline is the real clock's, whatever Options.Clock.
func timedOut(callCtx context.Context, err error) bool {
	if errors.Is(callCtx.Err(), context.DeadlineExceeded) {
		return true
	}
	deadline, ok := callCtx.Deadline()
	return ok && status.Code(err) == codes.DeadlineExceeded && !time.Now().Before(deadline)
}

// holds evaluates a condition; an empty one always holds.
func (d *Dispatcher) holds(ctx context.Context, expr string, vmi *kubevirtv1.VirtualMachineInstance) (bool, error) {
	if expr == "" {
		return true, nil
	}
	c, err := d.cel.Condition(expr)
	if err != nil {
		return false, err
	}
	return c.Eval(ctx, vmi)
}

// lockKey identifies the VMI whose dispatches are ordered.
func lockKey(vmi *kubevirtv1.VirtualMachineInstance) string {
	if vmi.UID != "" {
		return string(vmi.UID)
	}
	return vmi.Namespace + "/" + vmi.Name
}

// prune closes connections to sockets no Plugin names any more, once per
// store revision. Revisions only grow: a dispatch holding an older
// snapshot than the last one pruned (it read the Plugins just before they
// changed) prunes nothing, so that it cannot close the connections of
// sockets that only the newer revision names.
func (d *Dispatcher) prune(snap store.Snapshot) {
	if snap.Revision <= d.prunedRevision.Load() {
		return
	}
	d.pruneMu.Lock()
	defer d.pruneMu.Unlock()
	if snap.Revision <= d.prunedRevision.Load() {
		return
	}
	d.prunedRevision.Store(snap.Revision)
	inUse := map[string]bool{}
	for _, p := range snap.Plugins {
		for _, h := range p.Spec.NodeHooks {
			inUse[h.Socket] = true
		}
	}
	d.pool.Forget(func(path string) bool { return inUse[path] })
}

func isNodeHookPoint(p pluginv1alpha1.NodeHookPoint) bool {
	return slices.Contains(pluginv1alpha1.NodeHookPoints, p)
}
