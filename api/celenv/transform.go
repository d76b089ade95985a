package celenv

import (
	"context"
	"fmt"
	"reflect"

	"github.com/google/cel-go/common/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// DomainTransform is a compiled GuestDefinition expression. It is safe for
// concurrent use.
type DomainTransform struct {
	c *compiled
	// mask lists the fields the expression writes; nil when the result is not
	// a Domain{...} literal and Apply merges the non-zero fields instead.
	mask *writeMask
}

// DomainTransform compiles a GuestDefinition expression, or returns the one
// compiled earlier from the same text. The expression sees the variables vmi
// and domainSpec and must return a libvirtxml Domain, normally written as a
// literal: Domain{CPU: DomainCPU{Mode: "host-passthrough"}}. A bad expression
// yields a *CompileError.
func (e *Env) DomainTransform(expr string) (*DomainTransform, error) {
	v, err := e.cache.get(cacheKey{kind: kindTransform, expr: expr}, func() (any, error) {
		c, err := e.compile(e.transforms, expr, func(out *types.Type) string {
			if out.IsExactType(e.domainCEL) {
				return ""
			}
			return fmt.Sprintf("a GuestDefinition expression must return a Domain{...} (%s), this one returns %s",
				e.domainCEL, out)
		})
		if err != nil {
			return nil, err
		}
		mask, err := maskOf(c.checked.NativeRep().Expr(), domainType)
		if err != nil {
			return nil, &CompileError{Expression: expr, Reason: ReasonType, Message: err.Error()}
		}
		return &DomainTransform{c: c, mask: mask}, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*DomainTransform), nil
}

var domainPtrType = reflect.PointerTo(domainType)

// Apply evaluates the expression with vmi and domain (as domainSpec) and merges
// the result into *domain: the fields the expression writes are overwritten,
// all others keep their values; lists are replaced wholesale. See the package
// documentation for the merge rules. On error *domain is unchanged.
func (t *DomainTransform) Apply(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, domain *libvirtxml.Domain) error {
	switch {
	case vmi == nil:
		return fmt.Errorf("applying GuestDefinition expression %q: no VMI given", t.c.expr)
	case domain == nil:
		return fmt.Errorf("applying GuestDefinition expression %q: no domain given", t.c.expr)
	}
	out, err := t.c.eval(ctx, &activation{vmi: vmi, domain: domain})
	if err != nil {
		return fmt.Errorf("applying GuestDefinition expression %q: %w", t.c.expr, err)
	}
	native, err := out.ConvertToNative(domainPtrType)
	if err != nil {
		return fmt.Errorf("applying GuestDefinition expression %q: result is not a Domain: %w", t.c.expr, err)
	}
	result := native.(*libvirtxml.Domain)
	if t.mask != nil {
		t.mask.apply(reflect.ValueOf(domain).Elem(), reflect.ValueOf(result).Elem())
	} else if result != domain {
		mergeNonZero(reflect.ValueOf(domain).Elem(), reflect.ValueOf(result).Elem())
	}
	return nil
}

// EstimatedCost returns the cost range estimated when the expression was
// compiled.
func (t *DomainTransform) EstimatedCost() CostEstimate { return t.c.cost }
