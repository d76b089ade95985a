// SPDX-License-Identifier: Apache-2.0

package celenv

import (
	"reflect"

	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// Absent attributes.
//
// A nil pointer to a scalar (d.Driver.IOThread without iothread=) reads as
// the scalar's zero value: CEL has no null for Go pointers. To write such a
// read back as nil, the read has to say at run time that it found nothing, and
// that must not change what any other part of the expression computes with
// the value.
//
// So the compiler marks the reads whose value can only travel, unchanged, to
// the initialiser of a struct literal field ("carried" reads): the read is
// the initialiser, or reaches it only through branches of ?:, list literal
// elements, the list operand of an index, list concatenation and the result
// of a map() or filter(). Each carried read of a pointer-to-scalar field is
// planned through a field name of its own (the Go name and absentReadSuffix),
// for which goTypes returns absentScalar, not the plain zero value, when the
// pointer is nil. The struct literal then leaves the field nil
// (goTypes.toNative). Every other read, in a comparison, an arithmetic
// operation, a function call or a comprehension variable, is the plain zero
// value: it cannot meet an absentScalar.

// absentReadSuffix follows the Go field name in the field name a carried read
// is planned with. Being no Go identifier, it cannot clash with a field.
const absentReadSuffix = "\x00carried"

// absentScalar is the value of a carried read of a nil pointer to a scalar:
// the zero value the field reads as, remembering that the field was absent.
type absentScalar struct {
	ref.Val
}

// markCarriedReads renames, in the checked AST about to be planned, the field
// of every carried read of a pointer-to-scalar field (see above). Node IDs
// and types are unchanged, so the program plans as the checked expression
// did.
func (g *goTypes) markCarriedReads(checked *ast.AST) {
	m := carriedReads{g: g, typed: checked, fac: ast.NewExprFactory()}
	m.walk(checked.Expr(), false)
}

type carriedReads struct {
	g     *goTypes
	typed *ast.AST
	fac   ast.ExprFactory
}

// walk visits x, which is carried when its value can only reach a struct
// literal field initialiser unchanged.
func (m *carriedReads) walk(x ast.Expr, carried bool) {
	switch x.Kind() {
	case ast.StructKind:
		for _, f := range x.AsStruct().Fields() {
			sf := f.AsStructField()
			// An optional entry's value is an optional, not the field's value.
			m.walk(sf.Value(), !sf.IsOptional())
		}
	case ast.MapKind:
		for _, e := range x.AsMap().Entries() {
			me := e.AsMapEntry()
			m.walk(me.Key(), false)
			m.walk(me.Value(), false)
		}
	case ast.ListKind:
		l := x.AsList()
		optional := map[int32]bool{}
		for _, i := range l.OptionalIndices() {
			optional[i] = true
		}
		for i, e := range l.Elements() {
			m.walk(e, carried && !optional[int32(i)])
		}
	case ast.SelectKind:
		s := x.AsSelect()
		m.walk(s.Operand(), false)
		if carried && !s.IsTestOnly() && m.g.isPointerScalarField(m.typed.GetType(s.Operand().ID()), s.FieldName()) {
			x.SetKindCase(m.fac.NewSelect(x.ID(), s.Operand(), s.FieldName()+absentReadSuffix))
		}
	case ast.CallKind:
		c := x.AsCall()
		if c.IsMemberFunction() {
			m.walk(c.Target(), false)
		}
		args := c.Args()
		for i, a := range args {
			through := false
			switch c.FunctionName() {
			case operators.Conditional:
				through = i > 0
			case operators.Index:
				through = i == 0
			case operators.Add:
				through = m.typed.GetType(x.ID()).Kind() == types.ListKind
			}
			m.walk(a, carried && through)
		}
	case ast.ComprehensionKind:
		c := x.AsComprehension()
		m.walk(c.IterRange(), false)
		m.walk(c.AccuInit(), carried)
		m.walk(c.LoopCondition(), false)
		m.walk(c.LoopStep(), carried)
		m.walk(c.Result(), carried)
	}
}

// isPointerScalarField reports whether field of the struct type t is a Go
// pointer to something CEL reads as a scalar.
func (g *goTypes) isPointerScalarField(t *types.Type, field string) bool {
	if t == nil || t.Kind() != types.StructKind {
		return false
	}
	// named, not known: a checked expression from another process is planned
	// without the checker having met its types here.
	for _, gt := range g.named(t.TypeName()) {
		sf, ok := gt.FieldByName(field)
		if !ok {
			continue
		}
		ft := sf.Type
		return ft.Kind() == reflect.Pointer && (ft.Elem().Kind() != reflect.Struct || isScalarStruct(ft.Elem()))
	}
	return false
}
