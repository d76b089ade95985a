// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"cmp"
	"errors"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubevirt-plugins/framework/api/celenv"
	v1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

// CEL compiles every CEL expression of p with env, the environment the
// launcher and the handler use, and returns one error per rejected
// expression, in spec order: conditions must be bool over vmi,
// GuestDefinition expressions must yield a Domain, and both must stay
// within env's cost limit. Empty conditions mean "always" and pass.
//
// A Plugin with more hooks (or references) than the schema allows is
// refused by count (Counts) before any expression is compiled: CEL then
// returns those errors and compiles nothing.
func CEL(p *v1alpha1.Plugin, env *celenv.Env) field.ErrorList {
	if errs := Counts(p); len(errs) > 0 {
		return errs
	}
	var errs field.ErrorList
	check := func(path *field.Path, expr string, compile func(string) error) {
		if expr == "" || len(expr) > maxExpressionLength {
			return // the length rule reports overlong ones
		}
		if err := compile(expr); err != nil {
			errs = append(errs, field.Invalid(path, field.OmitValueType{}, compileMessage(err)))
		}
	}
	condition := func(e string) error { _, err := env.Condition(e); return err }
	transform := func(e string) error { _, err := env.DomainTransform(e); return err }

	spec := field.NewPath("spec")
	check(spec.Child("condition"), p.Spec.Condition, condition)
	for i := range p.Spec.LauncherHooks {
		h := &p.Spec.LauncherHooks[i]
		path := spec.Child("launcherHooks").Index(i)
		check(path.Child("condition"), h.Condition, condition)
		if h.CEL != nil {
			check(path.Child("cel", "expression"), h.CEL.Expression, transform)
		}
	}
	for i := range p.Spec.NodeHooks {
		check(spec.Child("nodeHooks").Index(i).Child("condition"), p.Spec.NodeHooks[i].Condition, condition)
	}
	return errs
}

// All returns every problem of p, structural and CEL, ordered by field
// path so that a listing reads top to bottom. A Plugin with more hooks (or
// references) than the schema allows is refused by count alone: All then
// returns only the errors of Counts, without looking at the items or
// compiling anything, so that its cost does not grow with the lists.
func All(p *v1alpha1.Plugin, env *celenv.Env) field.ErrorList {
	if errs := Counts(p); len(errs) > 0 {
		return errs
	}
	errs := append(Plugin(p), CEL(p, env)...)
	slices.SortStableFunc(errs, func(a, b *field.Error) int { return compareFieldPaths(a.Field, b.Field) })
	return errs
}

// compileMessage leaves the expression out: the field path already says
// which one it is, and expressions can be long.
func compileMessage(err error) string {
	if ce, ok := errors.AsType[*celenv.CompileError](err); ok {
		return ce.Reason + " error: " + ce.Message
	}
	return err.Error()
}

// compareFieldPaths orders field paths as text, except that list indexes
// compare as numbers ([2] before [10]).
func compareFieldPaths(a, b string) int {
	for a != "" && b != "" {
		ca, ra := leadingChunk(a)
		cb, rb := leadingChunk(b)
		if isDigit(ca[0]) && isDigit(cb[0]) {
			na, _ := strconv.Atoi(ca)
			nb, _ := strconv.Atoi(cb)
			if c := cmp.Compare(na, nb); c != 0 {
				return c
			}
		} else if c := strings.Compare(ca, cb); c != 0 {
			return c
		}
		a, b = ra, rb
	}
	return cmp.Compare(len(a), len(b))
}

// leadingChunk splits s after its leading run of digits or of non-digits.
func leadingChunk(s string) (string, string) {
	digits := isDigit(s[0])
	i := 1
	for i < len(s) && isDigit(s[i]) == digits {
		i++
	}
	return s[:i], s[i:]
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
