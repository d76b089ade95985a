// SPDX-License-Identifier: Apache-2.0

package celenv

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// Options configures an Env. The zero value is ready to use.
type Options struct {
	// CostLimit caps the cost of one evaluation of a GuestDefinition
	// expression, and those whose estimated worst-case cost exceeds it are
	// rejected when compiled. Default DefaultCostLimit.
	CostLimit uint64
	// ConditionCostLimit does the same for conditions, which virt-handler
	// evaluates for every VM of its node at every node hook point. Default
	// DefaultConditionCostLimit.
	ConditionCostLimit uint64
	// CacheSize bounds the number of compiled expressions (conditions and
	// transforms together) kept; the least recently used go first.
	// Default DefaultCacheSize (4096). Negative is an error.
	CacheSize int
}

// ErrCostLimitExceeded is wrapped by evaluation errors of an expression that
// was stopped because it reached the cost limit.
var ErrCostLimitExceeded = errors.New("CEL cost limit exceeded")

// interruptCheckFrequency is how many comprehension iterations run between two
// looks at the context.
const interruptCheckFrequency = 100

const (
	varVMI        = "vmi"
	varDomainSpec = "domainSpec"
)

var (
	vmiType    = reflect.TypeFor[kubevirtv1.VirtualMachineInstance]()
	domainType = reflect.TypeFor[libvirtxml.Domain]()
)

// Env compiles and caches conditions and GuestDefinition expressions. It is
// safe for concurrent use.
//
// New builds nothing: the CEL environment of conditions is built when the
// first condition is compiled, the one of GuestDefinition expressions when
// the first of those is, and each describes only the Go types its
// expressions reach (see goTypes). A process that is handed no expression
// pays for none.
type Env struct {
	conditions lazyEnv
	transforms lazyEnv
	domainCEL  *types.Type
	// costLimit bounds GuestDefinition expressions, conditionLimit
	// conditions.
	costLimit      uint64
	conditionLimit uint64
	cache          *programCache

	// compilations counts the compilations run, so that tests can tell a
	// cache hit from a compilation; plannedFromChecked the expressions
	// planned from their checked form.
	compilations       atomic.Uint64
	plannedFromChecked atomic.Uint64
}

// lazyEnv is a CEL environment built on first use.
type lazyEnv struct {
	once  sync.Once
	build func() (*cel.Env, *goTypes, error)
	env   *cel.Env
	types *goTypes
	err   error
}

func (l *lazyEnv) get() (*cel.Env, *goTypes, error) {
	l.once.Do(func() { l.env, l.types, l.err = l.build() })
	return l.env, l.types, l.err
}

// New returns an Env. It builds no CEL environment yet.
func New(opts Options) (*Env, error) {
	if opts.CostLimit == 0 {
		opts.CostLimit = DefaultCostLimit
	}
	if opts.ConditionCostLimit == 0 {
		opts.ConditionCostLimit = DefaultConditionCostLimit
	}
	switch {
	case opts.CacheSize < 0:
		return nil, fmt.Errorf("celenv: negative cache size %d", opts.CacheSize)
	case opts.CacheSize == 0:
		opts.CacheSize = DefaultCacheSize
	}
	e := &Env{
		domainCEL:      types.NewObjectType(celTypeName(domainType)),
		costLimit:      opts.CostLimit,
		conditionLimit: opts.ConditionCostLimit,
		cache:          newProgramCache(opts.CacheSize),
	}
	e.conditions.build = newConditionEnv
	e.transforms.build = newTransformEnv
	return e, nil
}

// Go structs are full of unsigned fields (libvirtxml's uint, KubeVirt's
// uint32): comparing them with an int literal must just work.
var crossTypeNumericComparisons = cel.CrossTypeNumericComparisons(true)

func newConditionEnv() (*cel.Env, *goTypes, error) {
	var g *goTypes
	env, err := cel.NewEnv(
		crossTypeNumericComparisons,
		goTypesOf(&g, []string{varVMI}, vmiType),
		cel.Variable(varVMI, types.NewObjectType(celTypeName(vmiType))),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("celenv: building the condition environment: %w", err)
	}
	return env, g, nil
}

func newTransformEnv() (*cel.Env, *goTypes, error) {
	var g *goTypes
	env, err := cel.NewEnv(
		crossTypeNumericComparisons,
		// optional.of and optional.none, and ?F: in literals, leave a field
		// unset. They register a type, so they come before the custom
		// provider.
		cel.OptionalTypes(),
		goTypesOf(&g, []string{varVMI, varDomainSpec}, vmiType, domainType),
		// Bare Domain, DomainCPU, ... name the libvirtxml types.
		cel.Container(strings.TrimSuffix(celTypeName(domainType), "."+domainType.Name())),
		cel.Variable(varVMI, types.NewObjectType(celTypeName(vmiType))),
		cel.Variable(varDomainSpec, types.NewObjectType(celTypeName(domainType))),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("celenv: building the GuestDefinition environment: %w", err)
	}
	return env, g, nil
}

// env returns the environment of one kind of expression, building it on
// first use.
func (e *Env) env(kind exprKind) (*cel.Env, *goTypes, error) {
	if kind == kindTransform {
		return e.transforms.get()
	}
	return e.conditions.get()
}

// limit is the cost limit of one kind of expression.
func (e *Env) limit(kind exprKind) uint64 {
	if kind == kindCondition {
		return e.conditionLimit
	}
	return e.costLimit
}

// resultProblem says what is wrong with the result type of an expression of
// kind, "" when nothing is.
func (e *Env) resultProblem(kind exprKind, out *types.Type) string {
	switch {
	case kind == kindCondition && !out.IsExactType(types.BoolType):
		return fmt.Sprintf("a condition must evaluate to bool, this one evaluates to %s", out)
	case kind == kindTransform && !out.IsExactType(e.domainCEL):
		return fmt.Sprintf("a GuestDefinition expression must return a Domain{...} (%s), this one returns %s", e.domainCEL, out)
	}
	return ""
}

// compiled is what both kinds of expression hold.
type compiled struct {
	expr    string
	checked *cel.Ast
	program cel.Program
	cost    CostEstimate
	limit   uint64
	// loops: the expression has a comprehension (all, exists, map,
	// filter, ...), the only place where cel-go checks the context while
	// it evaluates.
	loops bool
}

// compile parses, checks, verifies the result type, estimates the cost and
// plans the program.
func (e *Env) compile(kind exprKind, expr string) (*compiled, error) {
	e.compilations.Add(1)
	env, g, err := e.env(kind)
	if err != nil {
		return nil, err
	}
	parsed, iss := env.Parse(expr)
	if iss.Err() != nil {
		return nil, &CompileError{Expression: expr, Reason: ReasonSyntax, Message: iss.Err().Error()}
	}
	checked, iss := env.Check(parsed)
	if iss.Err() != nil {
		return nil, &CompileError{Expression: expr, Reason: ReasonType, Message: iss.Err().Error()}
	}
	return e.plan(kind, env, g, expr, checked)
}

// plan verifies the result type of a checked expression, estimates its
// cost and plans the program.
func (e *Env) plan(kind exprKind, env *cel.Env, g *goTypes, expr string, checked *cel.Ast) (*compiled, error) {
	if msg := e.resultProblem(kind, checked.OutputType()); msg != "" {
		return nil, &CompileError{Expression: expr, Reason: ReasonType, Message: msg}
	}
	est, err := env.EstimateCost(checked, sizeEstimator{})
	if err != nil {
		return nil, &CompileError{Expression: expr, Reason: ReasonCost, Message: "estimating the cost: " + err.Error()}
	}
	cost := CostEstimate{Min: est.Min, Max: est.Max}
	limit := e.limit(kind)
	if cost.Max > limit {
		return nil, &CompileError{
			Expression: expr,
			Reason:     ReasonCost,
			Message: fmt.Sprintf("estimated cost %d to %d exceeds the cost limit %d",
				cost.Min, cost.Max, limit),
			Cost: cost,
		}
	}
	loops := hasComprehension(checked)
	opts := []cel.ProgramOption{cel.EvalOptions(cel.OptOptimize)}
	if loops || cost.Min != cost.Max {
		// The cost depends on the input (a comprehension, a string's
		// length): count it as the evaluation goes, and look at the
		// context in loops. An expression without a loop whose cost does
		// not depend on the input (estimated minimum equal to maximum)
		// always costs what it was admitted with, within the limit:
		// counting would only slow it down (three quarters of a nested
		// field condition's time, 11 of its 13 allocations).
		opts = append(opts, cel.CostLimit(limit), cel.InterruptCheckFrequency(interruptCheckFrequency))
	}
	if kind == kindTransform {
		g.markCarriedReads(checked.NativeRep())
		opts = append(opts, cel.CustomDecoratorV2(g.structConstructors(checked.NativeRep())))
	}
	program, err := env.Program(checked, opts...)
	if err != nil {
		// Planning fails on bad constant arguments (a malformed regular
		// expression literal, for instance).
		return nil, &CompileError{Expression: expr, Reason: ReasonType, Message: err.Error()}
	}
	return &compiled{expr: expr, checked: checked, program: program, cost: cost, limit: limit, loops: loops}, nil
}

// eval runs a compiled program.
func (c *compiled) eval(ctx context.Context, vars *activation) (ref.Val, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out ref.Val
	var err error
	if c.loops {
		out, _, err = c.program.ContextEval(ctx, vars)
	} else {
		// Without a comprehension there is nothing the context could
		// interrupt (the cost limit still applies), so the context's
		// per-call set-up is spared: it was a fifth of a condition's time.
		out, _, err = c.program.Eval(vars)
	}
	if err != nil {
		var cancelled interpreter.EvalCancelledError
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("%w: %w", ctx.Err(), err)
		case errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded:
			return nil, fmt.Errorf("%w (limit %d): %w", ErrCostLimitExceeded, c.limit, err)
		}
		return nil, err
	}
	return out, nil
}

// hasComprehension tells whether the checked expression loops anywhere.
func hasComprehension(checked *cel.Ast) bool {
	found := false
	ast.PostOrderVisit(checked.NativeRep().Expr(), ast.NewExprVisitor(func(x ast.Expr) {
		if x.Kind() == ast.ComprehensionKind {
			found = true
		}
	}))
	return found
}

// activation resolves the variables of one evaluation without allocating a map.
type activation struct {
	vmi    *kubevirtv1.VirtualMachineInstance
	domain *libvirtxml.Domain
}

var _ interpreter.Activation = (*activation)(nil)

// ResolveName implements interpreter.Activation.
func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case varVMI:
		return a.vmi, true
	case varDomainSpec:
		if a.domain != nil {
			return a.domain, true
		}
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (a *activation) Parent() interpreter.Activation { return nil }
