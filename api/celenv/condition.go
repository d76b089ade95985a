// SPDX-License-Identifier: Apache-2.0

package celenv

import (
	"context"
	"fmt"

	"cel.dev/cel-go/common/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// Condition is a compiled condition. It is safe for concurrent use.
type Condition struct {
	c *compiled
}

// Condition compiles a condition, or returns the one compiled earlier from the
// same text. A condition sees only the variable vmi and must evaluate to bool.
// A bad expression yields a *CompileError.
func (e *Env) Condition(expr string) (*Condition, error) {
	v, err := e.cache.get(cacheKey{kind: kindCondition, expr: expr}, func() (any, error) {
		c, err := e.compile(kindCondition, expr)
		if err != nil {
			return nil, err
		}
		return &Condition{c: c}, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*Condition), nil
}

// Eval evaluates the condition against vmi. It stops with an error when ctx
// ends or the cost limit is reached.
func (c *Condition) Eval(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) (bool, error) {
	if vmi == nil {
		return false, fmt.Errorf("evaluating condition %q: no VMI given", c.c.expr)
	}
	out, err := c.c.eval(ctx, &activation{vmi: vmi})
	if err != nil {
		return false, fmt.Errorf("evaluating condition %q: %w", c.c.expr, err)
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("evaluating condition %q: got %v, not a bool", c.c.expr, out)
	}
	return bool(b), nil
}

// EstimatedCost returns the cost range estimated when the condition was
// compiled.
func (c *Condition) EstimatedCost() CostEstimate { return c.c.cost }
