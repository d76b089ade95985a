package validation

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

// Checker compiles CEL expressions the way the launcher and the handler
// will. A nil error means the expression is accepted.
type Checker interface {
	// CheckCondition accepts an expression over vmi that yields a bool.
	CheckCondition(expression string) error
	// CheckDomainTransform accepts a GuestDefinition expression that
	// yields a Domain.
	CheckDomainTransform(expression string) error
}

// PluginCEL checks every CEL expression of spec and returns one field error
// per rejected expression, in the order they appear in the spec. Empty
// conditions mean "always" and are not checked.
func PluginCEL(c Checker, spec *pluginv1alpha1.PluginSpec) field.ErrorList {
	var errs field.ErrorList
	check := func(path *field.Path, expr string, fn func(string) error) {
		if expr == "" {
			return
		}
		if err := fn(expr); err != nil {
			errs = append(errs, field.Invalid(path, field.OmitValueType{}, err.Error()))
		}
	}
	specPath := field.NewPath("spec")
	check(specPath.Child("condition"), spec.Condition, c.CheckCondition)
	for i := range spec.LauncherHooks {
		h := &spec.LauncherHooks[i]
		p := specPath.Child("launcherHooks").Index(i)
		check(p.Child("condition"), h.Condition, c.CheckCondition)
		if h.CEL != nil {
			check(p.Child("cel", "expression"), h.CEL.Expression, c.CheckDomainTransform)
		}
	}
	for i := range spec.NodeHooks {
		p := specPath.Child("nodeHooks").Index(i)
		check(p.Child("condition"), spec.NodeHooks[i].Condition, c.CheckCondition)
	}
	return errs
}
