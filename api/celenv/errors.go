// SPDX-License-Identifier: Apache-2.0

package celenv

import "fmt"

// The values of CompileError.Reason.
const (
	// ReasonSyntax: the text does not parse as CEL.
	ReasonSyntax = "syntax"
	// ReasonType: the expression parses but does not type-check in its
	// environment: an undeclared variable, an unknown field, a wrong result
	// type, no matching overload, an invalid constant argument such as a bad
	// regular expression.
	ReasonType = "type"
	// ReasonCost: the estimated worst-case cost exceeds the cost limit.
	ReasonCost = "cost"
)

// CompileError is returned by Env.Condition and Env.DomainTransform for an
// expression that cannot be used.
type CompileError struct {
	// Expression is the expression text as given.
	Expression string
	// Reason is ReasonSyntax, ReasonType or ReasonCost.
	Reason string
	// Message is CEL's issues text (with line, column and a caret under the
	// offending spot), or for ReasonCost the estimate and the limit.
	Message string
	// Cost is the estimated cost; set only for ReasonCost.
	Cost CostEstimate
}

// Error implements error.
func (e *CompileError) Error() string {
	return fmt.Sprintf("invalid CEL expression %q (%s): %s", e.Expression, e.Reason, e.Message)
}
