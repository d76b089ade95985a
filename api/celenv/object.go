// SPDX-License-Identifier: Apache-2.0

package celenv

import (
	"fmt"
	"reflect"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// object is a Go struct (or a pointer to one) of the registered types as a
// CEL value. It stands in for cel-go's native objects, which work out their
// type name with reflection and string formatting on every value made: here
// the CEL type is made once per Go type (typeInfo), so reading
// a struct field costs an allocation and no formatting.
type object struct {
	g   *goTypes
	val any
	rv  reflect.Value
	typ *types.Type
}

var (
	_ ref.Val            = (*object)(nil)
	_ traits.FieldTester = (*object)(nil)
	_ traits.Indexer     = (*object)(nil)
)

// ConvertToNative implements ref.Val: the value itself, the struct behind the
// pointer, or a pointer to a copy of the struct.
func (o *object) ConvertToNative(t reflect.Type) (any, error) {
	switch {
	case o.rv.Type() == t:
		return o.val, nil
	case o.rv.Kind() == reflect.Pointer && o.rv.Type().Elem() == t:
		return o.rv.Elem().Interface(), nil
	case t.Kind() == reflect.Pointer && o.rv.Type() == t.Elem():
		p := reflect.New(t.Elem())
		p.Elem().Set(o.rv)
		return p.Interface(), nil
	}
	return nil, fmt.Errorf("type conversion error from '%s' to '%v'", o.typ, t)
}

// ConvertToType implements ref.Val.
func (o *object) ConvertToType(t ref.Type) ref.Val {
	switch {
	case t == types.TypeType:
		return o.typ
	case t.TypeName() == o.typ.TypeName():
		return o
	}
	return types.NewErr("type conversion error from '%s' to '%s'", o.typ, t)
}

// Equal implements ref.Val: structs are equal when their Go values are,
// pointers or not, literals or not.
func (o *object) Equal(other ref.Val) ref.Val {
	var oo *object
	switch v := other.(type) {
	case *object:
		oo = v
	case *literal:
		oo = &v.object
	default:
		return types.False
	}
	return types.Bool(reflect.DeepEqual(reflect.Indirect(o.rv).Interface(), reflect.Indirect(oo.rv).Interface()))
}

// Type implements ref.Val.
func (o *object) Type() ref.Type { return o.typ }

// Value implements ref.Val.
func (o *object) Value() any { return o.val }

// IsZeroValue implements traits.Zeroer.
func (o *object) IsZeroValue() bool { return reflect.Indirect(o.rv).IsZero() }

// IsSet implements traits.FieldTester, for fields selected dynamically.
func (o *object) IsSet(field ref.Val) ref.Val {
	ft, ok := o.field(field)
	if !ok {
		return types.NewErr("no such field %v in %s", field, o.typ)
	}
	return types.Bool(ft.IsSet(o.val))
}

// Get implements traits.Indexer, for fields selected dynamically.
func (o *object) Get(field ref.Val) ref.Val {
	ft, ok := o.field(field)
	if !ok {
		return types.NewErr("no such field %v in %s", field, o.typ)
	}
	v, err := ft.GetFrom(o.val)
	if err != nil {
		return types.WrapErr(err)
	}
	return o.g.NativeToValue(v)
}

func (o *object) field(field ref.Val) (*types.FieldType, bool) {
	name, ok := field.(types.String)
	if !ok {
		return nil, false
	}
	return o.g.FindStructFieldType(o.typ.TypeName(), string(name))
}

// inputList is a list of structs read from an input. Its elements are
// pointers into the input's slice, so that reading an element copies
// nothing, and the merge can write the slice itself back when the list is
// read back unchanged.
type inputList struct {
	traits.Lister
	orig reflect.Value
}

// newObjectValue wraps v when it is a registered struct or a pointer to one,
// and lists and maps holding them so that their elements are objects too.
func (g *goTypes) newObjectValue(value any) (ref.Val, bool) {
	rv := reflect.ValueOf(value)
	if !rv.IsValid() {
		return nil, false
	}
	t := rv.Type()
	switch t.Kind() {
	case reflect.Struct:
		if ti, ok := g.info(t); ok {
			return &object{g: g, val: value, rv: rv, typ: ti.typ}, true
		}
	case reflect.Pointer:
		if ti, ok := g.info(t.Elem()); ok {
			if rv.IsNil() {
				rv = ti.absent
				value = rv.Interface()
			}
			return &object{g: g, val: value, rv: rv, typ: ti.typ}, true
		}
	case reflect.Slice:
		elem := t.Elem()
		if _, ok := g.info(elem); ok {
			ptrs := reflect.MakeSlice(reflect.SliceOf(reflect.PointerTo(elem)), rv.Len(), rv.Len())
			for i := range rv.Len() {
				ptrs.Index(i).Set(rv.Index(i).Addr())
			}
			return &inputList{Lister: types.NewDynamicList(g, ptrs.Interface()), orig: rv}, true
		}
		if elem.Kind() == reflect.Pointer {
			if _, ok := g.info(elem.Elem()); ok {
				return types.NewDynamicList(g, value), true
			}
		}
	case reflect.Map:
		elem := t.Elem()
		if elem.Kind() == reflect.Pointer {
			elem = elem.Elem()
		}
		if _, ok := g.info(elem); ok {
			return types.NewDynamicMap(g, value), true
		}
	}
	return nil, false
}
