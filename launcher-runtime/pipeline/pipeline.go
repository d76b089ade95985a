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
	kubevirtv1 "kubevirt.io/api/core/v1"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/api/plugin/v1alpha1/validation"
	"github.com/kubevirt-plugins/framework/launcher-runtime/internal/sockets"
	hooksv1alpha1 "github.com/kubevirt-plugins/framework/protos/hooks/v1alpha1"
)

// Pipeline runs the launcher hooks of a fixed set of Plugins. It is safe for
// concurrent use; each hook point call has its own socket wait budget.
type Pipeline struct {
	opts    Options
	log     logr.Logger
	root    *sockets.Root
	metrics *metrics
	plugins []compiledPlugin
}

type compiledPlugin struct {
	name      string
	condition condition
	hooks     []compiledHook
}

type compiledHook struct {
	index     int
	hook      *pluginv1alpha1.LauncherHook
	condition condition
	transform transform
	strategy  pluginv1alpha1.FailureStrategy
	timeout   time.Duration
}

func (h *compiledHook) kind() string {
	if h.hook.CEL != nil {
		return "cel"
	}
	return "sidecar"
}

// New validates the plugins with the rules of the Plugin CRD, compiles their
// conditions and CEL expressions once, and returns a Pipeline that runs
// their launcher hooks. Plugins run in alphabetical order of their names,
// whatever the order of the slice; two plugins may not share a name.
func New(plugins []pluginv1alpha1.Plugin, opts Options) (*Pipeline, error) {
	opts = opts.withDefaults()
	compiler, err := newCompiler(opts)
	if err != nil {
		return nil, err
	}
	p := &Pipeline{opts: opts, log: opts.Logger, root: sockets.NewRoot(opts.SocketRoot)}
	var problems []error
	seen := map[string]bool{}
	for i := range plugins {
		pl := plugins[i].DeepCopy()
		if seen[pl.Name] {
			problems = append(problems, fmt.Errorf("plugin %q: handed to the launcher twice", pl.Name))
			continue
		}
		seen[pl.Name] = true
		cp, errs := compilePlugin(pl, compiler)
		if len(errs) > 0 {
			problems = append(problems, errs...)
			continue
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

func compilePlugin(pl *pluginv1alpha1.Plugin, c compiler) (compiledPlugin, []error) {
	var errs []error
	for _, e := range validation.All(pl, c.env) {
		errs = append(errs, fmt.Errorf("plugin %q: %w", pl.Name, e))
	}
	if len(errs) > 0 {
		return compiledPlugin{}, errs
	}
	cp := compiledPlugin{name: pl.Name}
	var err error
	if cp.condition, err = c.condition(pl.Spec.Condition); err != nil {
		return cp, []error{fmt.Errorf("plugin %q: spec.condition: %w", pl.Name, err)}
	}
	for i := range pl.Spec.LauncherHooks {
		h := &pl.Spec.LauncherHooks[i]
		ch := compiledHook{index: i, hook: h, strategy: pl.LauncherFailureStrategy(i), timeout: h.EffectiveTimeout()}
		if ch.condition, err = c.condition(h.Condition); err != nil {
			return cp, []error{fmt.Errorf("plugin %q: spec.launcherHooks[%d].condition: %w", pl.Name, i, err)}
		}
		if h.CEL != nil {
			if ch.transform, err = c.transform(h.CEL.Expression); err != nil {
				return cp, []error{fmt.Errorf("plugin %q: spec.launcherHooks[%d].cel.expression: %w", pl.Name, i, err)}
			}
		}
		cp.hooks = append(cp.hooks, ch)
	}
	return cp, nil
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
	point := string(c.point)
	for pi := range c.p.plugins {
		pl := &c.p.plugins[pi]
		pluginHolds, pluginEvaluated := false, false
		for hi := range pl.hooks {
			h := &pl.hooks[hi]
			if !h.hook.Handles(c.point) {
				continue
			}
			log := c.p.log.WithValues("plugin", pl.name, "hook", h.index, "kind", h.kind(), "hookPoint", point)
			if err := ctx.Err(); err != nil {
				return c.hookError(pl, h, fmt.Errorf("not started: %w", err))
			}
			start := c.p.opts.Clock.Now()
			if !pluginEvaluated {
				ok, err := pl.condition.eval(ctx, c.vmi)
				if err != nil {
					c.p.metrics.observe(pl.name, point, OutcomeError, c.p.opts.Clock.Since(start))
					return fmt.Errorf("plugin %q condition at %s: %w", pl.name, point, err)
				}
				pluginHolds, pluginEvaluated = ok, true
			}
			holds := pluginHolds
			if holds {
				ok, err := h.condition.eval(ctx, c.vmi)
				if err != nil {
					c.p.metrics.observe(pl.name, point, OutcomeError, c.p.opts.Clock.Since(start))
					return c.hookError(pl, h, fmt.Errorf("condition: %w", err))
				}
				holds = ok
			}
			if !holds {
				c.p.metrics.observe(pl.name, point, OutcomeSkipped, 0)
				log.V(1).Info("launcher hook skipped: condition is false")
				continue
			}
			err := step(ctx, pl, h)
			took := c.p.opts.Clock.Since(start)
			switch {
			case err == nil:
				c.p.metrics.observe(pl.name, point, OutcomeSuccess, took)
				log.V(1).Info("launcher hook done", "duration", took)
			case ctx.Err() != nil:
				// The operation itself was cancelled (for example a migration
				// abort): no failure strategy lets the chain go on.
				c.p.metrics.observe(pl.name, point, OutcomeError, took)
				if !errors.Is(err, ctx.Err()) {
					err = fmt.Errorf("%w: %w", ctx.Err(), err)
				}
				return c.hookError(pl, h, err)
			case h.strategy == pluginv1alpha1.Ignore:
				c.p.metrics.observe(pl.name, point, OutcomeIgnored, took)
				log.Error(err, "launcher hook failed; failureStrategy is Ignore, going on without its result", "duration", took)
			default:
				c.p.metrics.observe(pl.name, point, OutcomeError, took)
				return c.hookError(pl, h, err)
			}
		}
	}
	return nil
}

func (c *call) hookError(pl *compiledPlugin, h *compiledHook, err error) error {
	return fmt.Errorf("plugin %q launcher hook #%d (%s) at %s: %w", pl.name, h.index, h.kind(), c.point, err)
}

// callSidecar encodes the VMI, waits for and connects to the hook's sidecar,
// and makes the call rpc makes with the hook's timeout. An error of rpc is
// the sidecar's; it is reported with the timeout in force.
func (c *call) callSidecar(ctx context.Context, pl *compiledPlugin, h *compiledHook,
	rpc func(ctx context.Context, client hooksv1alpha1.LauncherHookServiceClient, vmiJSON []byte) error) error {
	vmiJSON, err := c.vmiBytes()
	if err != nil {
		return fmt.Errorf("encoding the VMI: %w", err)
	}
	client, done, err := c.sidecar(ctx, pl, h)
	if err != nil {
		return err
	}
	defer done()
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	if err := rpc(ctx, client, vmiJSON); err != nil {
		return fmt.Errorf("calling the sidecar (timeout %s): %w", h.timeout, err)
	}
	return nil
}

// sidecar waits for the hook's socket within the call's budget and returns
// a client for it, and a function that closes the connection.
func (c *call) sidecar(ctx context.Context, pl *compiledPlugin, h *compiledHook) (hooksv1alpha1.LauncherHookServiceClient, func(), error) {
	socket := h.hook.Sidecar.SocketPath
	if _, err := c.budget.Wait(ctx, func() (string, error) { return c.p.root.Check(pl.name, socket) }); err != nil {
		return nil, nil, fmt.Errorf("socket %s: %w", socket, err)
	}
	conn, err := c.p.root.Dial(pl.name, socket, c.p.opts.MaxMessageSize)
	if err != nil {
		return nil, nil, fmt.Errorf("socket %s: %w", socket, err)
	}
	return hooksv1alpha1.NewLauncherHookServiceClient(conn), func() { _ = conn.Close() }, nil
}
