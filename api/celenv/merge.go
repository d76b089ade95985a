package celenv

import (
	"fmt"
	"reflect"

	"github.com/google/cel-go/common/ast"
)

// writeMask lists the fields a Domain{...} literal writes. A field whose
// initialiser is itself a struct literal has a sub-mask and is merged field by
// field; any other initialiser replaces the field wholesale.
type writeMask struct {
	fields []maskField
}

type maskField struct {
	name  string
	index []int
	sub   *writeMask
}

// maskOf derives the write mask of a checked expression whose result has Go
// type t. It returns nil when the expression is not a struct literal.
func maskOf(e ast.Expr, t reflect.Type) (*writeMask, error) {
	if e.Kind() != ast.StructKind {
		return nil, nil
	}
	m := &writeMask{}
	for _, entry := range e.AsStruct().Fields() {
		f := entry.AsStructField()
		sf, ok := t.FieldByName(f.Name())
		if !ok {
			return nil, fmt.Errorf("no field %q in %s", f.Name(), celTypeName(t))
		}
		mf := maskField{name: f.Name(), index: sf.Index}
		ft := sf.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Value().Kind() == ast.StructKind && ft.Kind() == reflect.Struct && !isScalarStruct(ft) {
			sub, err := maskOf(f.Value(), ft)
			if err != nil {
				return nil, err
			}
			mf.sub = sub
		}
		m.fields = append(m.fields, mf)
	}
	return m, nil
}

// apply writes the masked fields of src into dst, an addressable struct value
// of the same type.
func (m *writeMask) apply(dst, src reflect.Value) {
	for _, f := range m.fields {
		d := writeField(dst, f.index)
		s := readField(src, f.index)
		if f.sub == nil {
			d.Set(replacement(s))
			continue
		}
		if d.Kind() == reflect.Pointer {
			if d.IsNil() {
				d.Set(reflect.New(d.Type().Elem()))
			}
			d = d.Elem()
			if s.IsNil() {
				s = reflect.Zero(d.Type())
			} else {
				s = s.Elem()
			}
		}
		f.sub.apply(d, s)
	}
}

// replacement is the value a field is replaced with: a deep copy, so the domain
// never shares memory with what the expression read, and nil for a pointer to
// an empty struct. CEL has no null for Go pointers: reading an absent element
// (domainSpec.CPU when the domain has no <cpu>) yields an empty one, and
// copying it must keep the element absent rather than add an empty one.
func replacement(v reflect.Value) reflect.Value {
	if v.Kind() == reflect.Pointer && !v.IsNil() && v.Elem().Kind() == reflect.Struct && v.Elem().IsZero() {
		return reflect.Zero(v.Type())
	}
	return deepCopy(v)
}

// mergeNonZero merges src into dst, both struct values of the same type, dst
// addressable: structs and pointers to structs are merged recursively, any
// other non-zero field of src replaces the one of dst.
func mergeNonZero(dst, src reflect.Value) {
	t := dst.Type()
	for i := range t.NumField() {
		if !t.Field(i).IsExported() {
			continue
		}
		s := src.Field(i)
		if s.IsZero() {
			continue
		}
		d := dst.Field(i)
		switch {
		case s.Kind() == reflect.Struct && !isScalarStruct(s.Type()):
			mergeNonZero(d, s)
		case s.Kind() == reflect.Pointer && s.Elem().Kind() == reflect.Struct && !isScalarStruct(s.Elem().Type()):
			if d.IsNil() {
				d.Set(reflect.New(s.Elem().Type()))
			}
			if d.Pointer() != s.Pointer() {
				mergeNonZero(d.Elem(), s.Elem())
			}
		default:
			d.Set(deepCopy(s))
		}
	}
}

// deepCopy returns a copy of v sharing no pointers, slices or maps with it
// (through exported fields).
func deepCopy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return reflect.Zero(v.Type())
		}
		p := reflect.New(v.Type().Elem())
		p.Elem().Set(deepCopy(v.Elem()))
		return p
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		out.Set(v)
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				out.Field(i).Set(deepCopy(v.Field(i)))
			}
		}
		return out
	case reflect.Slice:
		if v.IsNil() {
			return reflect.Zero(v.Type())
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(deepCopy(v.Index(i)))
		}
		return out
	case reflect.Array:
		out := reflect.New(v.Type()).Elem()
		for i := range v.Len() {
			out.Index(i).Set(deepCopy(v.Index(i)))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return reflect.Zero(v.Type())
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		iter := v.MapRange()
		for iter.Next() {
			out.SetMapIndex(deepCopy(iter.Key()), deepCopy(iter.Value()))
		}
		return out
	case reflect.Interface:
		if v.IsNil() {
			return reflect.Zero(v.Type())
		}
		out := reflect.New(v.Type()).Elem()
		out.Set(deepCopy(v.Elem()))
		return out
	}
	return v
}
