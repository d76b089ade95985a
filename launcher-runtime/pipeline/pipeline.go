// SPDX-License-Identifier: Apache-2.0

package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubevirt-plugins/framework/api/hookresult"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/api/plugin/v1alpha1/validation"
	"github.com/kubevirt-plugins/framework/launcher-runtime/internal/sockets"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// Pipeline runs the launcher hooks of a fixed set of Plugins. It is safe for
// concurrent use; each hook point call has its own socket wait budget. It
// keeps one connection per sidecar socket for its whole life: Close
// releases them.
type Pipeline struct {
	opts    Options
	log     logr.Logger
	root    *sockets.Root
	metrics *metrics
	plugins []compiledPlugin
	conns   conns
}

type compiledPlugin struct {
	name      string
	condition condition
	hooks     []compiledHook
	// broken is why the plugin does not compile in this launcher; its
	// hooks then fail (or are skipped under Ignore) with this cause,
	// without their conditions being evaluated.
	broken error
}

type compiledHook struct {
	index     int
	hook      *pluginv1alpha1.LauncherHook
	condition condition
	transform transform
	strategy  pluginv1alpha1.FailureStrategy
	timeout   time.Duration
}

func (h *compiledHook) kind() HookKind {
	if h.hook.CEL != nil {
		return KindCEL
	}
	return KindSidecar
}

// New validates the plugins with the rules of the Plugin CRD, compiles their
// conditions and CEL expressions once, and returns a Pipeline that runs
// their launcher hooks. Plugins run in alphabetical order of their names,
// whatever the order of the slice; two plugins may not share a name.
//
// A Plugin that does not validate or compile here (admission was bypassed,
// or the CEL environment changed across an upgrade) does not make New fail:
// each of its hooks fails, at the hook points it handles, with a *HookError
// naming the plugin and the problem, under the hook's failure strategy (a
// Fail hook fails the call, an Ignore hook is skipped); the other plugins
// run as usual. New logs such a plugin once. A Plugin with more hooks than
// the CRD allows (pluginv1alpha1.MaxHooks) is such a plugin, found by
// count: none of its expressions is planned or compiled.
func New(plugins []pluginv1alpha1.Plugin, opts Options) (*Pipeline, error) {
	opts = opts.withDefaults()
	compiler, err := newCompiler(opts)
	if err != nil {
		return nil, err
	}
	p := &Pipeline{opts: opts, log: opts.Logger, root: sockets.NewRoot(opts.SocketRoot)}
	// A Plugin with more hooks than the CRD allows is refused by count
	// before anything of it is planned or compiled: planChecked does not
	// see it, and validation.All, which compilePlugin calls, counts first.
	counted := make([]pluginv1alpha1.Plugin, 0, len(plugins))
	for i := range plugins {
		if len(validation.Counts(&plugins[i])) == 0 {
			counted = append(counted, plugins[i])
		}
	}
	planChecked(counted, compiler, p.log)
	var problems []error
	seen := map[string]bool{}
	for i := range plugins {
		pl := plugins[i].DeepCopy()
		if seen[pl.Name] {
			problems = append(problems, fmt.Errorf("plugin %q: handed to the launcher twice", pl.Name))
			continue
		}
		seen[pl.Name] = true
		cp := compilePlugin(pl, compiler)
		if cp.broken != nil {
			p.log.Error(cp.broken, "plugin does not compile in the launcher: its launcher hooks fail, or are skipped under failureStrategy Ignore", "plugin", pl.Name)
		}
		p.plugins = append(p.plugins, cp)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("invalid plugins: %w", errors.Join(problems...))
	}
	slices.SortFunc(p.plugins, func(a, b compiledPlugin) int { return strings.Compare(a.name, b.name) })
	if p.metrics, err = newMetrics(opts.Registerer); err != nil {
		return nil, fmt.Errorf("registering launcher hook metrics: %w", err)
	}
	return p, nil
}

// Close closes the connections to the sidecars. Hook point calls made after
// Close fail at their first sidecar hook.
func (p *Pipeline) Close() error {
	return p.conns.close()
}

// compilePlugin compiles pl; when that fails, the result holds the raw
// hooks (their hook points, failure strategies and kinds) and the reason.
func compilePlugin(pl *pluginv1alpha1.Plugin, c compiler) compiledPlugin {
	cp := compiledPlugin{name: pl.Name}
	for i := range pl.Spec.LauncherHooks {
		h := &pl.Spec.LauncherHooks[i]
		cp.hooks = append(cp.hooks, compiledHook{index: i, hook: h, strategy: pl.LauncherFailureStrategy(i), timeout: h.EffectiveTimeout()})
	}
	if errs := validation.All(pl, c.env); len(errs) > 0 {
		cp.broken = fmt.Errorf("the plugin does not compile in this launcher: %w", errs.ToAggregate())
		return cp
	}
	var err error
	if cp.condition, err = c.condition(pl.Spec.Condition); err != nil {
		cp.broken = fmt.Errorf("the plugin does not compile in this launcher: spec.condition: %w", err)
		return cp
	}
	for i := range cp.hooks {
		ch := &cp.hooks[i]
		if ch.condition, err = c.condition(ch.hook.Condition); err != nil {
			cp.broken = fmt.Errorf("the plugin does not compile in this launcher: spec.launcherHooks[%d].condition: %w", i, err)
			return cp
		}
		if ch.hook.CEL != nil {
			if ch.transform, err = c.transform(ch.hook.CEL.Expression); err != nil {
				cp.broken = fmt.Errorf("the plugin does not compile in this launcher: spec.launcherHooks[%d].cel.expression: %w", i, err)
				return cp
			}
		}
	}
	return cp
}

// call is one hook point call: the state every hook of the chain shares.
type call struct {
	p      *Pipeline
	point  pluginv1alpha1.LauncherHookPoint
	vmi    *kubevirtv1.VirtualMachineInstance
	budget *sockets.Budget

	vmiOnce sync.Once
	vmiJSON []byte
	vmiErr  error

	// prov records who changed what in the domain (GuestDefinition); nil
	// where nothing can overlap and no report is asked for.
	prov *provenance
	// report is filled as the hooks run when the host asked for one.
	report *Report
	// socketWait is what the running hook has spent on its socket so far
	// (HookReport.SocketWait); observe takes it.
	socketWait time.Duration
}

func (p *Pipeline) newCall(point pluginv1alpha1.LauncherHookPoint, vmi *kubevirtv1.VirtualMachineInstance) *call {
	return &call{
		p:      p,
		point:  point,
		vmi:    vmi,
		budget: sockets.NewBudget(p.opts.Clock, p.opts.SocketWaitBudget, 0),
	}
}

// vmiBytes is the VMI as JSON, encoded once per call for every sidecar.
func (c *call) vmiBytes() ([]byte, error) {
	c.vmiOnce.Do(func() { c.vmiJSON, c.vmiErr = json.Marshal(c.vmi) })
	return c.vmiJSON, c.vmiErr
}

// hookStep runs one hook. It returns the error of the hook itself; the
// caller applies the failure strategy. A step commits its result to the
// chain's state only when it succeeds.
type hookStep func(ctx context.Context, pl *compiledPlugin, h *compiledHook) error

// run walks the hooks handling c.point in order: plugins alphabetically,
// hooks in declaration order. Conditions are evaluated plugin first, then
// hook; an evaluation error fails the call whatever the failure strategy, as
// does the end of ctx.
func (c *call) run(ctx context.Context, step hookStep) error {
	for pi := range c.p.plugins {
		pl := &c.p.plugins[pi]
		pluginHolds, pluginEvaluated := false, false
		for hi := range pl.hooks {
			h := &pl.hooks[hi]
			if !h.hook.Handles(c.point) {
				continue
			}
			log := c.hookLog(pl, h)
			if err := ctx.Err(); err != nil {
				return c.hookError(pl, h, fmt.Errorf("not started: %w", err))
			}
			if pl.broken != nil {
				herr := c.hookError(pl, h, pl.broken)
				if h.strategy == pluginv1alpha1.Ignore {
					c.observe(pl, h, hookresult.Ignored, 0, herr)
					log.Error(herr, hookresult.IgnoredMessage, hookresult.KeyOutcome, hookresult.Ignored, hookresult.KeyDuration, time.Duration(0))
					continue
				}
				c.observe(pl, h, hookresult.Error, 0, herr)
				return herr
			}
			start := c.p.opts.Clock.Now()
			if !pluginEvaluated {
				ok, err := pl.condition.eval(ctx, c.vmi)
				if err != nil {
					herr := &HookError{Plugin: pl.name, Scope: hookresult.ScopePlugin, HookIndex: PluginCondition, HookPoint: c.point,
						Err: fmt.Errorf("plugin condition: %w", err)}
					c.observe(pl, nil, hookresult.Error, c.p.opts.Clock.Since(start), herr)
					return herr
				}
				pluginHolds, pluginEvaluated = ok, true
			}
			holds := pluginHolds
			if holds {
				ok, err := h.condition.eval(ctx, c.vmi)
				if err != nil {
					herr := c.hookError(pl, h, fmt.Errorf("condition: %w", err))
					c.observe(pl, h, hookresult.Error, c.p.opts.Clock.Since(start), herr)
					return herr
				}
				holds = ok
			}
			if !holds {
				c.observe(pl, h, hookresult.Skipped, 0, nil)
				log.V(hookresult.HookLogV).Info("launcher hook skipped: condition is false", hookresult.KeyOutcome, hookresult.Skipped)
				continue
			}
			err := step(ctx, pl, h)
			took := c.p.opts.Clock.Since(start)
			if earlier, ok := errors.AsType[*earlierHookFailed](err); ok {
				return earlier.err
			}
			switch {
			case err == nil:
				c.observe(pl, h, hookresult.Success, took, nil)
				log.V(hookresult.HookLogV).Info("launcher hook done", hookresult.KeyOutcome, hookresult.Success, hookresult.KeyDuration, took)
			case ctx.Err() != nil:
				// The operation itself was cancelled (for example a migration
				// abort): no failure strategy lets the chain go on.
				if !errors.Is(err, ctx.Err()) {
					err = fmt.Errorf("%w: %w", ctx.Err(), err)
				}
				herr := c.hookError(pl, h, err)
				c.observe(pl, h, hookresult.Error, took, herr)
				return herr
			case h.strategy == pluginv1alpha1.Ignore:
				herr := c.hookError(pl, h, err)
				c.observe(pl, h, hookresult.Ignored, took, herr)
				log.Error(herr, hookresult.IgnoredMessage, hookresult.KeyOutcome, hookresult.Ignored, hookresult.KeyDuration, took)
			default:
				herr := c.hookError(pl, h, err)
				c.observe(pl, h, hookresult.Error, took, herr)
				return herr
			}
		}
	}
	return nil
}

func (c *call) hookError(pl *compiledPlugin, h *compiledHook, err error) error {
	e := &HookError{Plugin: pl.name, HookIndex: h.index, Kind: h.kind(), HookPoint: c.point, Err: err}
	if h.hook.Sidecar != nil {
		e.Socket = h.hook.Sidecar.SocketPath
	}
	return e
}

// hookLog is the logger of the lines about hook h of pl at this call, with
// the keys api/hookresult names.
func (c *call) hookLog(pl *compiledPlugin, h *compiledHook) logr.Logger {
	return c.p.log.WithValues(hookresult.KeyPlugin, pl.name, hookresult.KeyHookIndex, h.index, "kind", h.kind(),
		hookresult.KeyHookPoint, string(c.point))
}

// callSidecar encodes the VMI (once per call), gets a connection to the
// hook's sidecar, and makes the call rpc makes with the hook's timeout. An
// error of rpc is the sidecar's; it is reported with the timeout in force.
//
// When a connection kept from an earlier call turns out broken (the call
// fails with Unavailable before the sidecar sent anything back: it
// restarted since), the hook is called once more on a connection dialed
// again, after waiting for the socket within the call's budget; hooks are
// idempotent. A status the sidecar itself returns, Unavailable included, is
// its answer: the call is not repeated and the connection is kept.
func (c *call) callSidecar(ctx context.Context, pl *compiledPlugin, h *compiledHook,
	rpc func(ctx context.Context, client hooksv1alpha1.LauncherHookServiceClient, vmiJSON []byte) error) error {
	vmiJSON, err := c.vmiBytes()
	if err != nil {
		return fmt.Errorf("encoding the VMI: %w", err)
	}
	var broken *pooled
	for {
		conn, reused, err := c.sidecarConn(ctx, pl, h, broken)
		if err != nil {
			return err
		}
		callCtx, cancel := context.WithTimeout(ctx, h.timeout)
		callCtx, answered := withAnswerWatch(callCtx)
		err = rpc(callCtx, hooksv1alpha1.NewLauncherHookServiceClient(conn.cc), vmiJSON)
		cancel()
		c.p.conns.release(conn)
		if err == nil {
			return nil
		}
		if reused && broken == nil && ctx.Err() == nil && status.Code(err) == codes.Unavailable && !answered.Load() {
			c.p.log.V(1).Info("connection to the sidecar broke; dialing again", hookresult.KeyPlugin, pl.name, hookresult.KeyHookIndex, h.index, "socket", h.hook.Sidecar.SocketPath, "error", err.Error())
			broken = conn
			continue
		}
		return fmt.Errorf("calling the sidecar (timeout %s): %w", h.timeout, err)
	}
}

// sidecarConn returns, in use, the connection to the hook's socket. A
// connection kept from an earlier call that is connected, and not the
// broken one the caller just failed on, is used as it is (reused is true).
// Otherwise the socket is waited for, within the call's budget, until a
// connection to it succeeds (a socket file that exists while nothing
// listens on it is a sidecar still starting or restarting), and the kept
// connection is replaced by one dialed through the checked dial.
func (c *call) sidecarConn(ctx context.Context, pl *compiledPlugin, h *compiledHook, broken *pooled) (conn *pooled, reused bool, err error) {
	socket := h.hook.Sidecar.SocketPath
	key := pl.name + "\x00" + socket
	seen, err := c.p.conns.current(key)
	if err != nil {
		return nil, false, err
	}
	if seen != nil && seen != broken && seen.cc.GetState() == connectivity.Ready && c.p.conns.acquire(key, seen) {
		return seen, true, nil
	}
	start := c.p.opts.Clock.Now()
	defer func() { c.socketWait += c.p.opts.Clock.Since(start) }()
	if err := c.budget.Wait(ctx, func(ctx context.Context) error { return c.p.root.Probe(ctx, pl.name, socket) }); err != nil {
		return nil, false, fmt.Errorf("socket %s: %w", socket, err)
	}
	conn, err = c.p.conns.renew(key, seen, func() (*grpc.ClientConn, error) {
		return c.p.root.Dial(pl.name, socket, c.p.opts.MaxMessageSize, grpc.WithStatsHandler(answerWatch{}))
	})
	if err != nil {
		return nil, false, fmt.Errorf("socket %s: %w", socket, err)
	}
	return conn, false, nil
}
