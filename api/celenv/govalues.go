// SPDX-License-Identifier: Apache-2.0

package celenv

// Value conversion of goTypes: Go values of the graph to CEL values
// (NativeToValue, toCEL) and CEL values back to Go values of a given type
// (toNative), and field access through embedded pointers. The types
// themselves are described in gotypes.go.

import (
	"fmt"
	"reflect"
	"time"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NativeToValue implements types.Adapter.
func (g *goTypes) NativeToValue(value any) ref.Val {
	switch v := value.(type) {
	case ref.Val:
		return v
	case resource.Quantity, *resource.Quantity, metav1.Time, *metav1.Time, metav1.MicroTime, *metav1.MicroTime:
		return g.baseAdapter.NativeToValue(g.toCEL(reflect.ValueOf(v)))
	}
	if v, ok := g.newObjectValue(value); ok {
		return v
	}
	// Collections of collections of structs: their elements come back here.
	if rv := reflect.ValueOf(value); rv.IsValid() && g.holdsObjects(rv.Type()) {
		switch rv.Kind() {
		case reflect.Slice, reflect.Array:
			return types.NewDynamicList(g, value)
		case reflect.Map:
			return types.NewDynamicMap(g, value)
		}
	}
	return g.baseAdapter.NativeToValue(value)
}

// holdsObjects reports whether t is a collection holding, at any depth, a
// struct type of the graph that CEL sees as an object.
func (g *goTypes) holdsObjects(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		if t.Elem() == byteType {
			return false
		}
		elem := structOf(t.Elem())
		if elem == nil {
			return false
		}
		_, ok := g.info(elem)
		return ok
	}
	return false
}

// readField follows a field index path; a nil embedded pointer on the way
// yields the zero value of the field instead of a panic.
func readField(v reflect.Value, index []int) reflect.Value {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Zero(v.Type().Elem().FieldByIndex(index[i:]).Type)
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v
}

// writeField follows a field index path of an addressable struct, allocating
// nil embedded pointers on the way.
func writeField(v reflect.Value, index []int) reflect.Value {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v
}

// zeroTimestamp is what an unset time reads as, like the native provider.
var zeroTimestamp = time.Unix(0, 0).UTC()

// toCEL turns a Go field value into something the CEL adapter understands,
// applying goTypes' readings: a nil pointer reads as its zero value (CEL has no
// null for Go pointers; for a struct, the type's absent sentinel), Quantity as
// its string, metav1 times as time.Time.
func (g *goTypes) toCEL(v reflect.Value) any {
	t := v.Type()
	switch t {
	case quantityType:
		q := v.Interface().(resource.Quantity)
		return q.String()
	case metaTimeType:
		return timeOrZero(v.Interface().(metav1.Time).Time)
	case microTimeType:
		return timeOrZero(v.Interface().(metav1.MicroTime).Time)
	case timeType:
		return timeOrZero(v.Interface().(time.Time))
	}
	switch t.Kind() {
	case reflect.Pointer:
		elem := t.Elem()
		if v.IsNil() {
			if elem.Kind() == reflect.Struct && !isScalarStruct(elem) {
				if ti, ok := g.info(elem); ok {
					return ti.absent.Interface()
				}
				return reflect.New(elem).Interface()
			}
			return g.toCEL(reflect.Zero(elem))
		}
		if elem.Kind() == reflect.Struct && !isScalarStruct(elem) {
			return v.Interface()
		}
		return g.toCEL(v.Elem())
	case reflect.Slice, reflect.Array, reflect.Map:
		if needsConversion(t) {
			return g.convertCollection(v).Interface()
		}
	case reflect.Struct:
		// Read in place: a struct field of an input is not copied.
		if v.CanAddr() {
			return v.Addr().Interface()
		}
	}
	return v.Interface()
}

func timeOrZero(t time.Time) time.Time {
	if t.IsZero() {
		return zeroTimestamp
	}
	return t
}

// isScalarStruct reports the struct types that CEL sees as scalars.
func isScalarStruct(t reflect.Type) bool {
	switch t {
	case quantityType, metaTimeType, microTimeType, timeType:
		return true
	}
	return false
}

// needsConversion reports whether a collection type holds, directly or through
// nested collections and pointers, a value goTypes reads differently.
func needsConversion(t reflect.Type) bool {
	if isScalarStruct(t) {
		return true
	}
	switch t.Kind() {
	case reflect.Pointer:
		return needsConversion(t.Elem())
	case reflect.Slice, reflect.Array:
		return t.Elem() != byteType && needsConversion(t.Elem())
	case reflect.Map:
		return needsConversion(t.Key()) || needsConversion(t.Elem())
	}
	return false
}

// convertedType is the Go type convertCollection produces for t.
func convertedType(t reflect.Type) reflect.Type {
	switch t {
	case quantityType:
		return stringType
	case metaTimeType, microTimeType:
		return timeType
	}
	switch t.Kind() {
	case reflect.Pointer:
		if needsConversion(t.Elem()) {
			return convertedType(t.Elem())
		}
	case reflect.Slice, reflect.Array:
		if needsConversion(t.Elem()) {
			return reflect.SliceOf(convertedType(t.Elem()))
		}
	case reflect.Map:
		if needsConversion(t) {
			return reflect.MapOf(convertedType(t.Key()), convertedType(t.Elem()))
		}
	}
	return t
}

func (g *goTypes) convertCollection(v reflect.Value) reflect.Value {
	t := v.Type()
	if !needsConversion(t) {
		return v
	}
	out := convertedType(t)
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		s := reflect.MakeSlice(out, v.Len(), v.Len())
		for i := range v.Len() {
			s.Index(i).Set(g.convertCollection(v.Index(i)))
		}
		return s
	case reflect.Map:
		m := reflect.MakeMapWithSize(out, v.Len())
		iter := v.MapRange()
		for iter.Next() {
			m.SetMapIndex(g.convertCollection(iter.Key()), g.convertCollection(iter.Value()))
		}
		return m
	case reflect.Pointer:
		if v.IsNil() {
			return reflect.Zero(out)
		}
		return g.convertCollection(v.Elem())
	}
	return reflect.ValueOf(g.toCEL(v))
}

// toNative converts a CEL value into a value of Go type t, for struct
// construction. It handles what the CEL values' own ConvertToNative does not:
// pointers to scalars, named scalar types, lists and maps of those, and the
// types goTypes reads differently.
//
// A pointer-to-struct field given the absent sentinel of its type (a read of
// an absent element) becomes nil: the element stays absent. So does a pointer
// given an absentScalar (a carried read of an absent attribute); any other
// type takes the zero value the absentScalar stands for.
func (g *goTypes) toNative(val ref.Val, t reflect.Type) (reflect.Value, error) {
	if a, ok := val.(*absentScalar); ok {
		if t.Kind() == reflect.Pointer {
			return reflect.Zero(t), nil
		}
		val = a.Val
	}
	switch t {
	case quantityType:
		s, ok := val.(types.String)
		if !ok {
			return reflect.Value{}, fmt.Errorf("want a quantity string, got %s", val.Type().TypeName())
		}
		q, err := resource.ParseQuantity(string(s))
		if err != nil {
			return reflect.Value{}, err
		}
		return reflect.ValueOf(q), nil
	case metaTimeType, microTimeType:
		ts, ok := val.(types.Timestamp)
		if !ok {
			return reflect.Value{}, fmt.Errorf("want a timestamp, got %s", val.Type().TypeName())
		}
		return reflect.ValueOf(ts.Time).Convert(t), nil
	}
	// Structs and pointers to structs read from the inputs or built by
	// literals convert without boxing a copy.
	if rv, ok := structValue(val); ok {
		switch {
		case rv.Type() == t:
			if rv.Kind() == reflect.Pointer {
				if ti, ok := g.info(t.Elem()); ok && rv.Pointer() == ti.absent.Pointer() {
					return reflect.Zero(t), nil
				}
			}
			return rv, nil
		case rv.Kind() == reflect.Pointer && rv.Type().Elem() == t:
			return rv.Elem(), nil
		}
	}
	switch t.Kind() {
	// cel-go's own conversions take Go's int and uint for 32 bits wide:
	// libvirtxml's uint memory sizes in bytes would overflow.
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if i, ok := val.(types.Int); ok && t != durationType {
			scalar := reflect.New(t).Elem()
			if scalar.OverflowInt(int64(i)) {
				return reflect.Value{}, fmt.Errorf("%d overflows %s", int64(i), t)
			}
			scalar.SetInt(int64(i))
			return scalar, nil
		}
	case reflect.String:
		if str, ok := val.(types.String); ok {
			scalar := reflect.New(t).Elem()
			scalar.SetString(string(str))
			return scalar, nil
		}
	case reflect.Bool:
		if b, ok := val.(types.Bool); ok {
			scalar := reflect.New(t).Elem()
			scalar.SetBool(bool(b))
			return scalar, nil
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if u, ok := val.(types.Uint); ok {
			scalar := reflect.New(t).Elem()
			if scalar.OverflowUint(uint64(u)) {
				return reflect.Value{}, fmt.Errorf("%d overflows %s", uint64(u), t)
			}
			scalar.SetUint(uint64(u))
			return scalar, nil
		}
	case reflect.Pointer:
		if t.Elem().Kind() == reflect.Struct && !isScalarStruct(t.Elem()) {
			if ti, ok := g.info(t.Elem()); ok && val.Value() == ti.absent.Interface() {
				return reflect.Zero(t), nil
			}
			return convertByValue(val, t)
		}
		elem, err := g.toNative(val, t.Elem())
		if err != nil {
			return reflect.Value{}, err
		}
		p := reflect.New(t.Elem())
		p.Elem().Set(elem)
		return p, nil
	case reflect.Slice:
		if t.Elem() == byteType {
			return convertByValue(val, t)
		}
		// A list read unchanged from an input is its Go slice: share it.
		if l, ok := val.(*inputList); ok && l.orig.Type() == t {
			return l.orig, nil
		}
		if rv := reflect.ValueOf(val.Value()); rv.IsValid() && rv.Type() == t {
			return rv, nil
		}
		list, ok := val.(traits.Lister)
		if !ok {
			return reflect.Value{}, fmt.Errorf("want a list, got %s", val.Type().TypeName())
		}
		n := int(list.Size().(types.Int))
		out := reflect.MakeSlice(t, n, n)
		for i := range n {
			elem, err := g.toNative(list.Get(types.Int(i)), t.Elem())
			if err != nil {
				return reflect.Value{}, fmt.Errorf("list element %d: %w", i, err)
			}
			out.Index(i).Set(elem)
		}
		return out, nil
	case reflect.Map:
		m, ok := val.(traits.Mapper)
		if !ok {
			return reflect.Value{}, fmt.Errorf("want a map, got %s", val.Type().TypeName())
		}
		out := reflect.MakeMapWithSize(t, int(m.Size().(types.Int)))
		it := m.Iterator()
		for it.HasNext() == types.True {
			k := it.Next()
			key, err := g.toNative(k, t.Key())
			if err != nil {
				return reflect.Value{}, fmt.Errorf("map key %v: %w", k, err)
			}
			elem, err := g.toNative(m.Get(k), t.Elem())
			if err != nil {
				return reflect.Value{}, fmt.Errorf("map value at %v: %w", k, err)
			}
			out.SetMapIndex(key, elem)
		}
		return out, nil
	}
	return convertByValue(val, t)
}

// structValue returns the Go value behind an object or a literal.
func structValue(val ref.Val) (reflect.Value, bool) {
	switch v := val.(type) {
	case *object:
		return v.rv, true
	case *literal:
		return v.rv, true
	}
	return reflect.Value{}, false
}

// convertByValue lets the CEL value convert itself, then converts a result of
// the underlying type into a named type (libvirtxml and KubeVirt use many).
func convertByValue(val ref.Val, t reflect.Type) (reflect.Value, error) {
	if err, ok := val.(*types.Err); ok {
		return reflect.Value{}, err
	}
	native, err := val.ConvertToNative(t)
	if err != nil {
		return reflect.Value{}, err
	}
	rv := reflect.ValueOf(native)
	switch {
	case !rv.IsValid():
		return reflect.Zero(t), nil
	case rv.Type() == t:
		return rv, nil
	case rv.Type().ConvertibleTo(t):
		return rv.Convert(t), nil
	}
	return reflect.Value{}, fmt.Errorf("cannot assign %s to %s", rv.Type(), t)
}
