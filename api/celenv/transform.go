// SPDX-License-Identifier: Apache-2.0

package celenv

import (
	"context"
	"reflect"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// DomainTransform is a compiled GuestDefinition expression. It is safe for
// concurrent use.
type DomainTransform struct {
	c *compiled
}

// DomainTransform compiles a GuestDefinition expression, or returns the one
// compiled earlier from the same text. The expression sees the variables vmi
// and domainSpec and must return a libvirtxml Domain, normally written as a
// literal: Domain{CPU: DomainCPU{Mode: "host-passthrough"}}. A bad expression
// yields a *CompileError.
func (e *Env) DomainTransform(expr string) (*DomainTransform, error) {
	v, err := e.cache.get(cacheKey{kind: kindTransform, expr: expr}, func() (any, error) {
		c, err := e.compile(kindTransform, expr)
		if err != nil {
			return nil, err
		}
		return &DomainTransform{c: c}, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*DomainTransform), nil
}

var domainPtrType = reflect.PointerTo(domainType)

// Merge evaluates the expression with vmi and domain (as domainSpec) and
// returns the domain with the result merged into it, following the merge
// rules of the package documentation. domain is never modified; the result
// shares with it every part the expression did not write (it is domain
// itself when the expression returns domainSpec), so callers treat both as
// read-only.
func (t *DomainTransform) Merge(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, domain *libvirtxml.Domain) (*libvirtxml.Domain, error) {
	next, _, err := t.merge(ctx, vmi, domain, false)
	return next, err
}

// Apply is Merge writing the result into *domain: on success *domain holds
// the merged domain (which may share parts with what *domain held before);
// on error it is unchanged.
func (t *DomainTransform) Apply(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, domain *libvirtxml.Domain) error {
	next, err := t.Merge(ctx, vmi, domain)
	if err != nil {
		return err
	}
	if next != domain {
		*domain = *next
	}
	return nil
}

// EstimatedCost returns the cost range estimated when the expression was
// compiled.
func (t *DomainTransform) EstimatedCost() CostEstimate { return t.c.cost }
