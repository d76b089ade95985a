// SPDX-License-Identifier: Apache-2.0

package pipeline

import (
	"context"
	"fmt"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubevirt-plugins/framework/api/celenv"
)

// compiler turns the CEL text of a Plugin into programs, through the shared
// environment (and its cache) of package celenv.
type compiler struct {
	env *celenv.Env
}

func newCompiler(opts Options) (compiler, error) {
	if opts.CEL != nil {
		return compiler{env: opts.CEL}, nil
	}
	env, err := celenv.New(opts.CELOptions)
	if err != nil {
		return compiler{}, fmt.Errorf("building the CEL environment: %w", err)
	}
	return compiler{env: env}, nil
}

// condition is a compiled condition; the zero value (no condition) holds for
// every VMI.
type condition struct {
	program *celenv.Condition
}

func (c compiler) condition(expr string) (condition, error) {
	if expr == "" {
		return condition{}, nil
	}
	p, err := c.env.Condition(expr)
	return condition{program: p}, err
}

func (c condition) eval(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) (bool, error) {
	if c.program == nil {
		return true, nil
	}
	return c.program.Eval(ctx, vmi)
}

// transform is a compiled GuestDefinition expression.
type transform struct {
	program *celenv.DomainTransform
}

func (c compiler) transform(expr string) (transform, error) {
	p, err := c.env.DomainTransform(expr)
	return transform{program: p}, err
}
