// SPDX-License-Identifier: Apache-2.0

package celenv

import (
	"fmt"
	"reflect"

	"cel.dev/cel-go/common/types/ref"
	"libvirt.org/go/libvirtxml"
)

// literal is a struct built by a struct literal in the expression. It reads
// like any other struct value (the embedded object is the Go struct as
// built) and remembers which fields the literal initialised and with which
// CEL values, so that the merge can tell, at run time and wherever the literal
// went (a conditional, a list, a map() body), what the expression wrote.
type literal struct {
	// object is the Go struct as built, every field converted to its Go type
	// (absent reads already nil); rv points to it.
	object
	fields []literalField
	// buf holds the fields of small literals, saving an allocation.
	buf [4]literalField
}

// literalField is one field a literal initialised.
type literalField struct {
	index []int
	val   ref.Val
}

// Equal implements ref.Val: a literal equals the struct it built.
func (l *literal) Equal(other ref.Val) ref.Val { return l.object.Equal(other) }

// mergeResult returns the domain that the evaluation result out makes of
// domain, which it never modifies: a Domain literal is merged into a copy of
// domain, any other Domain value replaces it. The result shares every part
// the expression did not write with domain; only the structs on the paths
// from the root to the written fields are new.
func mergeResult(domain *libvirtxml.Domain, out ref.Val) (*libvirtxml.Domain, error) {
	if lit, ok := out.(*literal); ok && lit.rv.Type() == domainPtrType {
		next := new(libvirtxml.Domain)
		*next = *domain
		lit.mergeInto(reflect.ValueOf(next).Elem())
		return next, nil
	}
	native, err := out.ConvertToNative(domainPtrType)
	if err != nil {
		return nil, fmt.Errorf("result is not a Domain: %w", err)
	}
	return native.(*libvirtxml.Domain), nil
}

// mergeInto writes the fields the literal initialised into dst, an
// addressable struct of the literal's type that the caller owns (a fresh
// shallow copy). A field initialised with another literal of a struct type is
// merged into a shallow copy of the field's current value (a new element when
// it is a nil pointer); any other field takes the literal's value. Nothing
// reachable from dst's old field values is written to.
func (l *literal) mergeInto(dst reflect.Value) {
	built := l.rv.Elem()
	for _, f := range l.fields {
		d := writeField(dst, f.index)
		if sub, ok := f.val.(*literal); ok {
			st := sub.rv.Type().Elem()
			switch {
			case d.Kind() == reflect.Pointer && d.Type().Elem() == st:
				p := reflect.New(st)
				if !d.IsNil() {
					p.Elem().Set(d.Elem())
				}
				sub.mergeInto(p.Elem())
				d.Set(p)
				continue
			case d.Type() == st:
				v := reflect.New(st).Elem()
				v.Set(d)
				sub.mergeInto(v)
				d.Set(v)
				continue
			}
		}
		d.Set(readField(built, f.index))
	}
}
