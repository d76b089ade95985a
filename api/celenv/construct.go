// SPDX-License-Identifier: Apache-2.0

package celenv

import (
	"reflect"

	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
)

// structConstructors replaces, in a GuestDefinition program, cel-go's
// construction of struct literals (which gathers the fields into a map and
// then calls the type provider's NewValue) by a structConstructor that
// builds the literal directly: the field order, Go field and optional flag of
// every literal are worked out once, at compile time, from the checked AST.
func (g *goTypes) structConstructors(checked *ast.AST) interpreter.InterpretableDecoratorV2 {
	type plan struct {
		t      reflect.Type
		typ    *types.Type
		fields []constructorField
	}
	plans := map[int64]plan{}
	ast.PostOrderVisit(checked.Expr(), ast.NewExprVisitor(func(x ast.Expr) {
		if x.Kind() != ast.StructKind {
			return
		}
		s := x.AsStruct()
		t, ok := g.goType(s.TypeName())
		if !ok {
			return
		}
		ti, ok := g.info(t)
		if !ok {
			return
		}
		p := plan{t: t, typ: ti.typ}
		byName := ti.fieldsByName()
		for _, f := range s.Fields() {
			sf := f.AsStructField()
			field, ok := byName[sf.Name()]
			if !ok {
				return
			}
			p.fields = append(p.fields, constructorField{StructField: field, optional: sf.IsOptional()})
		}
		plans[x.ID()] = p
	}))
	return func(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
		c, ok := i.(interpreter.InterpretableConstructor)
		if !ok {
			return i, nil
		}
		p, ok := plans[i.ID()]
		if !ok || len(c.InitVals()) != len(p.fields) {
			return i, nil
		}
		return &structConstructor{g: g, id: i.ID(), t: p.t, typ: p.typ, fields: p.fields, vals: c.InitVals()}, nil
	}
}

type constructorField struct {
	reflect.StructField
	optional bool
}

// structConstructor builds one struct literal as a *literal.
type structConstructor struct {
	g      *goTypes
	id     int64
	t      reflect.Type
	typ    *types.Type
	fields []constructorField
	vals   []interpreter.InterpretableV2
}

var _ interpreter.InterpretableConstructor = (*structConstructor)(nil)

// ID implements interpreter.Interpretable.
func (s *structConstructor) ID() int64 { return s.id }

// InitVals implements interpreter.InterpretableConstructor.
func (s *structConstructor) InitVals() []interpreter.InterpretableV2 { return s.vals }

// Type implements interpreter.InterpretableConstructor: the cost tracker
// charges a struct creation for it.
func (s *structConstructor) Type() ref.Type { return s.typ }

// Eval implements interpreter.Interpretable, for callers of the older
// interface; the interpreter itself calls Exec.
func (s *structConstructor) Eval(act interpreter.Activation) ref.Val {
	frame, err := interpreter.NewExecutionFrame(act)
	if err != nil {
		return types.LabelErrNode(s.id, types.WrapErr(err))
	}
	defer frame.Close()
	return s.Exec(frame)
}

// Exec implements interpreter.InterpretableV2.
func (s *structConstructor) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	lit := s.g.newLiteral(s.t, s.typ, len(s.fields))
	for i, f := range s.fields {
		v := s.vals[i].Exec(frame)
		if types.IsUnknownOrError(v) {
			return v
		}
		if f.optional {
			o, ok := v.(*types.Optional)
			if !ok {
				return types.LabelErrNode(s.id, types.NewErr("field %s.%s: want an optional value, got %s", s.typ, f.Name, v.Type().TypeName()))
			}
			if !o.HasValue() {
				continue
			}
			v = o.GetValue()
		}
		if err := lit.set(s.g, f.StructField, v); err != nil {
			return types.LabelErrNode(s.id, types.NewErr("field %s.%s: %v", s.typ, f.Name, err))
		}
	}
	return lit
}
