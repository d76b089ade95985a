// SPDX-License-Identifier: Apache-2.0

package celenv

import (
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
)

// DefaultCostLimit is the cost limit of New when Options.CostLimit is zero.
//
// A CEL cost unit stands for one simple operation, roughly 100ns of work, so
// the limit stops one evaluation after about a second even on hostile input;
// real expressions on real objects cost a few hundred units. It is the figure
// Kubernetes uses as the static cost limit of one CustomResourceDefinition
// validation rule, so cluster admins meet a familiar scale. With the input
// bounds below it admits a comprehension over any list of the VMI or the
// domain whose body builds a struct (a per-disk map() estimates under 30,000)
// and a comprehension nested in another comparing numbers (under 700,000),
// and it refuses a nested one comparing strings (430 million) or three nested
// ones (170 million), whose real cost grows with the square or cube of the
// input.
const DefaultCostLimit uint64 = 10_000_000

// DefaultConditionCostLimit is the cost limit of conditions when
// Options.ConditionCostLimit is zero.
//
// A condition runs in virt-handler, one process for every VM of the node, at
// each node hook point, and reads the VM owner's labels and annotations, whose
// number nobody but etcd's object size bounds. A tenth of DefaultCostLimit
// stops an evaluation after about 0.1 s of CPU (docs/benchmarks.md, "CEL on
// large VMIs") and still admits every condition of the guide, a comprehension
// over the VMI's labels (about 7 units a label: 80,000 labels pass), and one
// nested in another over the VMI's lists comparing numbers.
const DefaultConditionCostLimit uint64 = 1_000_000

// Bounds the admission estimate assumes for values read from vmi or
// domainSpec. Real inputs stay within them; one that does not is still
// stopped at run time, by the same cost limit, with ErrCostLimitExceeded.
const (
	// maxInputListLen bounds the elements of a list or the entries of a map
	// read from an input. KubeVirt refuses a VMI with more than 256 disks,
	// volumes, interfaces or networks, and the domain's devices of one kind
	// come from those lists.
	maxInputListLen = 256
	// maxInputStringBytes bounds a string or bytes value read from an input.
	// KubeVirt bounds names and most strings of a VMI to 256 bytes and inline
	// cloud-init user data to 2 KiB; 64 KiB leaves room for annotation values.
	maxInputStringBytes = 64 << 10
	// maxInputBytes bounds a whole struct read from an input: etcd refuses
	// requests over 1.5 MiB (its default request size limit), so no stored
	// VMI is larger, and the domain is generated from the VMI.
	maxInputBytes = 3 << 19
)

// CostEstimate is the range of cost CEL estimates for one evaluation of an
// expression, in CEL cost units.
type CostEstimate struct{ Min, Max uint64 }

// sizeEstimator gives the cost estimator the sizes of values read from the
// inputs: the bounds above.
type sizeEstimator struct{}

var _ cost.Estimator = sizeEstimator{}

// EstimateSize implements cost.Estimator.
func (sizeEstimator) EstimateSize(n cost.AstNode) *cost.SizeEstimate {
	t := n.Type()
	if t == nil {
		return nil
	}
	var maxSize uint64
	switch t.Kind() {
	case types.StringKind, types.BytesKind:
		maxSize = maxInputStringBytes
	case types.StructKind:
		maxSize = maxInputBytes
	case types.ListKind, types.MapKind:
		maxSize = maxInputListLen
	default:
		return nil
	}
	return &cost.SizeEstimate{Min: 0, Max: maxSize}
}

// EstimateCallCost implements cost.Estimator: CEL's own call costs apply.
func (sizeEstimator) EstimateCallCost(string, string, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
	return nil
}
