// SPDX-License-Identifier: Apache-2.0

package celenv

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"cel.dev/cel-go/common/types/ref"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// WholeDomain is the written path of a result that replaced the whole
// domain: a Domain value that is not a struct literal.
const WholeDomain = ""

// MergeWritten is Merge that also returns the paths of the domain the
// expression changed: Go field names from Domain joined with dots, as an
// expression reads them ("CPU.Mode", "Devices.Watchdogs").
//
// The paths come from the merge itself, at the cost of the literal and not
// of the domain: a struct literal merges field by field, so its fields are
// followed down to the ones it set; a field set to what it already held (a
// value read back unchanged) is left out. A field that takes a value other
// than a struct literal is one path, a list included (lists are replaced
// wholesale); an element a literal adds where there was none, with no field
// set, is its own path ("Features.PAE" for PAE: DomainFeature{}). A result
// that is not a literal replaces the whole domain: WholeDomain, unless it
// is domain itself, which writes nothing.
func (t *DomainTransform) MergeWritten(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, domain *libvirtxml.Domain) (*libvirtxml.Domain, []string, error) {
	return t.merge(ctx, vmi, domain, true)
}

// merge is Merge, with the written paths when paths is true.
func (t *DomainTransform) merge(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, domain *libvirtxml.Domain, paths bool) (*libvirtxml.Domain, []string, error) {
	switch {
	case vmi == nil:
		return nil, nil, fmt.Errorf("applying GuestDefinition expression %q: no VMI given", t.c.expr)
	case domain == nil:
		return nil, nil, fmt.Errorf("applying GuestDefinition expression %q: no domain given", t.c.expr)
	}
	out, err := t.c.eval(ctx, &activation{vmi: vmi, domain: domain})
	if err != nil {
		return nil, nil, fmt.Errorf("applying GuestDefinition expression %q: %w", t.c.expr, err)
	}
	next, err := mergeResult(domain, out)
	if err != nil {
		return nil, nil, fmt.Errorf("applying GuestDefinition expression %q: %w", t.c.expr, err)
	}
	if !paths {
		return next, nil, nil
	}
	return next, writtenPaths(domain, next, out), nil
}

// writtenPaths lists what out, the expression's result, changed in domain
// to make next (see MergeWritten).
func writtenPaths(domain, next *libvirtxml.Domain, out ref.Val) []string {
	lit, ok := out.(*literal)
	if !ok || lit.rv.Type() != domainPtrType {
		if next == domain {
			return nil
		}
		return []string{WholeDomain}
	}
	paths := make([]string, 0, len(lit.fields))
	lit.written(reflect.ValueOf(domain).Elem(), "", &paths)
	if len(paths) == 0 {
		return nil
	}
	return paths
}

// written appends to paths, below the path of the struct (empty for the
// domain), the fields the literal sets to something else than old holds;
// old is the struct the literal is merged into, before the merge (a zero
// struct where there was none). It follows the recursion of mergeInto.
func (l *literal) written(old reflect.Value, path string, paths *[]string) {
	built := l.rv.Elem()
	for _, f := range l.fields {
		name := fieldPath(built.Type(), f.index)
		if path != "" {
			name = path + "." + name
		}
		was := readField(old, f.index)
		if sub, ok := f.val.(*literal); ok {
			st := sub.rv.Type().Elem()
			switch {
			case was.Kind() == reflect.Pointer && was.Type().Elem() == st:
				n := len(*paths)
				if was.IsNil() {
					sub.written(reflect.Zero(st), name, paths)
					if len(*paths) == n {
						// An element added with no field set: <pae/>.
						*paths = append(*paths, name)
					}
					continue
				}
				sub.written(was.Elem(), name, paths)
				continue
			case was.Type() == st:
				sub.written(was, name, paths)
				continue
			}
		}
		if !sameValue(was, readField(built, f.index)) {
			*paths = append(*paths, name)
		}
	}
}

// fieldPath names the field at index of struct type t: the Go field names
// of the (embedded) fields on the way, joined with dots.
func fieldPath(t reflect.Type, index []int) string {
	if len(index) == 1 {
		return t.Field(index[0]).Name
	}
	names := make([]string, 0, len(index))
	for _, x := range index {
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		f := t.Field(x)
		names = append(names, f.Name)
		t = f.Type
	}
	return strings.Join(names, ".")
}

// sameValue reports whether a field still holds what it held: the same
// pointer, map or list (same elements array and length, or both empty),
// an equal scalar, or a deeply equal struct.
func sameValue(was, now reflect.Value) bool {
	switch was.Kind() {
	case reflect.Pointer, reflect.Map:
		return was.Pointer() == now.Pointer()
	case reflect.Slice:
		return was.Len() == now.Len() && (was.Len() == 0 || was.Pointer() == now.Pointer())
	case reflect.Struct, reflect.Array, reflect.Interface:
		return reflect.DeepEqual(was.Interface(), now.Interface())
	}
	return was.Equal(now)
}
