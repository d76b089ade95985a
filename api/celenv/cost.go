package celenv

import (
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
)

// DefaultCostLimit is the cost limit of New when Options.CostLimit is zero.
//
// A CEL cost unit stands for one simple operation, roughly 100ns of work, so
// the limit stops one evaluation after about a second even on hostile input;
// real expressions on real objects cost a few dozen units. It is the figure
// Kubernetes uses as the static cost limit of one CustomResourceDefinition
// validation rule, so cluster admins meet a familiar scale. Since the
// estimator must assume a list read from an input may fill a whole object
// (maxInputBytes), the limit is what admits one comprehension over any list or
// map of the VMI or the domain, with a body of a dozen or so operations, while
// rejecting nested comprehensions over them, whose worst case is quadratic.
const DefaultCostLimit uint64 = 10_000_000

// maxInputBytes bounds the size of anything an expression reads from vmi or
// domainSpec: etcd refuses requests over 1.5 MiB (its default request size
// limit), so no stored VMI is larger, and the domain is generated from the
// VMI. Without such a bound every list, map or string read from an input
// would have an unbounded size and every expression touching one would exceed
// any cost limit.
const maxInputBytes = 3 << 19

// CostEstimate is the range of cost CEL estimates for one evaluation of an
// expression, in CEL cost units.
type CostEstimate struct{ Min, Max uint64 }

// sizeEstimator gives the cost estimator sizes for values read from the
// inputs: a string or a struct fills at most maxInputBytes, and a list or map
// holds at most as many elements as fit in maxInputBytes when each takes its
// smallest serialised (JSON) form plus a separator.
type sizeEstimator struct{}

var _ checker.CostEstimator = sizeEstimator{}

// EstimateSize implements checker.CostEstimator.
func (sizeEstimator) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	t := n.Type()
	if t == nil {
		return nil
	}
	var maxSize uint64
	switch t.Kind() {
	case types.StringKind, types.BytesKind, types.StructKind:
		maxSize = maxInputBytes
	case types.ListKind:
		maxSize = maxInputBytes / (minEncodedSize(t.Parameters()[0]) + 1)
	case types.MapKind:
		p := t.Parameters()
		maxSize = maxInputBytes / (minEncodedSize(p[0]) + minEncodedSize(p[1]) + 2)
	default:
		return nil
	}
	return &checker.SizeEstimate{Min: 0, Max: maxSize}
}

// EstimateCallCost implements checker.CostEstimator: CEL's own call costs apply.
func (sizeEstimator) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// minEncodedSize is the size in bytes of the shortest JSON encoding of a value
// of type t: `""`, `[]`, `{}` take two bytes, a number or a boolean one.
func minEncodedSize(t *types.Type) uint64 {
	switch t.Kind() {
	case types.StringKind, types.BytesKind, types.ListKind, types.MapKind, types.StructKind,
		types.TimestampKind, types.DurationKind:
		return 2
	}
	return 1
}
