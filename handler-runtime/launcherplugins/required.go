// SPDX-License-Identifier: Apache-2.0

package launcherplugins

import (
	"context"

	kubevirtv1 "kubevirt.io/api/core/v1"
)

// evalCondition evaluates the condition of a Plugin vmi requires. The
// environment builds the condition's CEL environment the first time one is
// compiled: VMIs that require nothing cost nothing.
func (s *Selector) evalCondition(ctx context.Context, expr string, vmi *kubevirtv1.VirtualMachineInstance) (bool, error) {
	c, err := s.cel.Condition(expr)
	if err != nil {
		return false, err
	}
	return c.Eval(ctx, vmi)
}
