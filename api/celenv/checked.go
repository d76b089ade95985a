// SPDX-License-Identifier: Apache-2.0

package celenv

import (
	"fmt"

	"cel.dev/cel-go/cel"
	exprpb "google.golang.org/genproto/googleapis/api/expr/v1alpha1"
	"google.golang.org/protobuf/proto"
)

// Checked expressions.
//
// Parsing is most of what the first expression costs a fresh process: the
// parser's tables are built on first use (about a millisecond and a
// megabyte in a virt-launcher, more than the environment and the plan
// together). virt-handler, which compiles every Plugin anyway, hands each
// launcher the checked form of its expressions (cel-go's CheckedExpr), and
// the launcher only plans them.

// CheckedSet holds the checked forms of expressions by their text, as one
// process hands them to another: JSON with base64 values.
type CheckedSet struct {
	Conditions map[string][]byte `json:"conditions,omitempty"`
	Transforms map[string][]byte `json:"transforms,omitempty"`
}

// CheckedCondition returns the checked form of the condition expr (cel-go's
// CheckedExpr in protobuf wire format, the same bytes for the same text), for
// ConditionFromChecked in another process with the same environment. It
// fails as Condition does.
func (e *Env) CheckedCondition(expr string) ([]byte, error) {
	if _, err := e.Condition(expr); err != nil {
		return nil, err
	}
	return e.checkedForm(kindCondition, expr)
}

// CheckedDomainTransform is CheckedCondition for a GuestDefinition
// expression.
func (e *Env) CheckedDomainTransform(expr string) ([]byte, error) {
	if _, err := e.DomainTransform(expr); err != nil {
		return nil, err
	}
	return e.checkedForm(kindTransform, expr)
}

// checkedForm parses and checks expr again: the compiled program's own
// checked expression is changed for planning (markCarriedReads).
func (e *Env) checkedForm(kind exprKind, expr string) ([]byte, error) {
	env, _, err := e.env(kind)
	if err != nil {
		return nil, err
	}
	checked, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	pb, err := cel.AstToCheckedExpr(checked)
	if err != nil {
		return nil, err
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(pb)
}

// ConditionFromChecked returns the condition expr planned from checked, its
// checked form made by CheckedCondition with the same environment, without
// parsing or checking it here. The result type and the cost limit are
// verified as Condition verifies them, and the result is cached under expr:
// Condition(expr) returns it. A checked form that does not decode, does not
// fit this environment or is refused is an error and is not cached: compile
// the text (Condition) instead. When expr is cached already, the cached
// result is returned.
func (e *Env) ConditionFromChecked(expr string, checked []byte) (*Condition, error) {
	v, err := e.fromChecked(kindCondition, expr, checked, func(c *compiled) any { return &Condition{c: c} })
	if err != nil {
		return nil, err
	}
	return v.(*Condition), nil
}

// DomainTransformFromChecked is ConditionFromChecked for a GuestDefinition
// expression.
func (e *Env) DomainTransformFromChecked(expr string, checked []byte) (*DomainTransform, error) {
	v, err := e.fromChecked(kindTransform, expr, checked, func(c *compiled) any { return &DomainTransform{c: c} })
	if err != nil {
		return nil, err
	}
	return v.(*DomainTransform), nil
}

func (e *Env) fromChecked(kind exprKind, expr string, checked []byte, wrap func(*compiled) any) (any, error) {
	key := cacheKey{kind: kind, expr: expr}
	if v, err, ok := e.cache.lookup(key); ok {
		return v, err
	}
	env, g, err := e.env(kind)
	if err != nil {
		return nil, err
	}
	var pb exprpb.CheckedExpr
	if err := proto.Unmarshal(checked, &pb); err != nil {
		return nil, fmt.Errorf("checked form of %q: %w", expr, err)
	}
	a, err := cel.CheckedExprToAstWithSource(&pb, nil)
	if err != nil {
		return nil, fmt.Errorf("checked form of %q: %w", expr, err)
	}
	if !a.IsChecked() {
		return nil, fmt.Errorf("checked form of %q: not a checked expression", expr)
	}
	e.plannedFromChecked.Add(1)
	c, err := e.plan(kind, env, g, expr, a)
	if err != nil {
		return nil, err
	}
	// Whoever caches first wins: a compilation of the same text that ran
	// meanwhile is as good.
	return e.cache.get(key, func() (any, error) { return wrap(c), nil })
}
