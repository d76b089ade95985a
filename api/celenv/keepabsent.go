package celenv

import (
	"fmt"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
)

// compileTransform compiles a GuestDefinition expression: the text the user
// wrote is checked (so errors name its positions), then the program is built
// from it rewritten by keepAbsent.
func (e *Env) compileTransform(expr string) (*compiled, error) {
	return e.compile(e.transforms, expr, func(out *types.Type) string {
		if out.IsExactType(e.domainCEL) {
			return ""
		}
		return fmt.Sprintf("a GuestDefinition expression must return a Domain{...} (%s), this one returns %s",
			e.domainCEL, out)
	}, func(checked *cel.Ast) (*cel.Ast, error) { return e.keepAbsent(expr, checked) })
}

// keepAbsent makes a struct literal leave a pointer-to-scalar field unset (nil)
// when its initialiser reads that field from an element where it is absent.
//
// Absent struct elements are told apart at run time (goTypes.absent), but a
// nil *uint reads as 0u, indistinguishable from a present 0. So every field
// initialiser that reads a pointer-to-scalar field, directly or as a branch of
// a conditional, is rewritten into an optional entry: F: x.f becomes
// ?F: has(x.f) ? optional.of(x.f) : optional.none(), and
// F: c ? x.f : v becomes ?F: c ? (has(x.f) ? ...) : optional.of(v).
// The expression is parsed again (giving the same node IDs as checked), the
// entries are rewritten and the result is checked again. Expressions without
// such initialisers are returned as they are.
func (e *Env) keepAbsent(expr string, checked *cel.Ast) (*cel.Ast, error) {
	typed := checked.NativeRep()
	r := absentRewriter{g: e.transformTypes, typed: typed}
	targets := map[int64]bool{}
	ast.PostOrderVisit(typed.Expr(), ast.NewExprVisitor(func(x ast.Expr) {
		if x.Kind() != ast.StructKind {
			return
		}
		for _, f := range x.AsStruct().Fields() {
			sf := f.AsStructField()
			if !sf.IsOptional() && r.readsPointerScalar(sf.Value()) {
				targets[f.ID()] = true
			}
		}
	}))
	if len(targets) == 0 {
		return checked, nil
	}
	parsed, iss := e.transforms.Parse(expr)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	root := parsed.NativeRep()
	r.next = ast.MaxID(root)
	r.fac = ast.NewExprFactory()
	ast.PostOrderVisit(root.Expr(), ast.NewExprVisitor(func(x ast.Expr) {
		if x.Kind() != ast.StructKind {
			return
		}
		s := x.AsStruct()
		fields := s.Fields()
		changed := false
		out := make([]ast.EntryExpr, len(fields))
		for i, f := range fields {
			out[i] = f
			if !targets[f.ID()] {
				continue
			}
			sf := f.AsStructField()
			out[i] = r.fac.NewStructField(f.ID(), sf.Name(), r.optional(sf.Value()), true)
			changed = true
		}
		if changed {
			x.SetKindCase(r.fac.NewStruct(x.ID(), s.TypeName(), out))
		}
	}))
	rewritten, iss := e.transforms.Check(parsed)
	if iss.Err() != nil {
		return nil, fmt.Errorf("keeping absent attributes absent: %w", iss.Err())
	}
	return rewritten, nil
}

// absentRewriter finds and rewrites the initialisers keepAbsent handles.
type absentRewriter struct {
	g     *goTypes
	typed *ast.AST
	fac   ast.ExprFactory
	next  int64
}

func (r *absentRewriter) id() int64 {
	r.next++
	return r.next
}

// readsPointerScalar reports whether x, in the checked AST, reads a
// pointer-to-scalar field, itself or as a branch of a conditional.
func (r *absentRewriter) readsPointerScalar(x ast.Expr) bool {
	switch x.Kind() {
	case ast.SelectKind:
		s := x.AsSelect()
		return !s.IsTestOnly() && r.isPointerScalarField(r.typed.GetType(s.Operand().ID()), s.FieldName())
	case ast.CallKind:
		c := x.AsCall()
		if c.FunctionName() == operators.Conditional && len(c.Args()) == 3 {
			return r.readsPointerScalar(c.Args()[1]) || r.readsPointerScalar(c.Args()[2])
		}
	}
	return false
}

// isPointerScalarField reports whether field of the struct type t is a Go
// pointer to something CEL reads as a scalar.
func (r *absentRewriter) isPointerScalarField(t *types.Type, field string) bool {
	if t == nil || t.Kind() != types.StructKind {
		return false
	}
	for _, gt := range r.g.byName[t.TypeName()] {
		sf, ok := gt.FieldByName(field)
		if !ok {
			continue
		}
		ft := sf.Type
		return ft.Kind() == reflect.Pointer && (ft.Elem().Kind() != reflect.Struct || isScalarStruct(ft.Elem()))
	}
	return false
}

// optional rewrites an initialiser of the parsed AST into an optional value:
// a read of a pointer-to-scalar field is present when the field is set; the
// branches of a conditional are rewritten alike; anything else is present.
// A select whose operand is not typed in the checked AST (its ID is new) is
// left as a plain optional.of.
func (r *absentRewriter) optional(x ast.Expr) ast.Expr {
	switch x.Kind() {
	case ast.SelectKind:
		s := x.AsSelect()
		if !s.IsTestOnly() && r.isPointerScalarField(r.typed.GetType(s.Operand().ID()), s.FieldName()) {
			operand := r.fac.CopyExpr(s.Operand())
			operand.RenumberIDs(func(int64) int64 { return r.id() })
			return r.fac.NewCall(r.id(), operators.Conditional,
				r.fac.NewPresenceTest(r.id(), operand, s.FieldName()),
				r.fac.NewCall(r.id(), "optional.of", x),
				r.fac.NewCall(r.id(), "optional.none"))
		}
	case ast.CallKind:
		c := x.AsCall()
		if c.FunctionName() == operators.Conditional && len(c.Args()) == 3 {
			a := c.Args()
			return r.fac.NewCall(r.id(), operators.Conditional, a[0], r.optional(a[1]), r.optional(a[2]))
		}
	}
	return r.fac.NewCall(r.id(), "optional.of", x)
}
