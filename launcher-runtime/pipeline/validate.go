package pipeline

import (
	"cmp"
	"errors"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubevirt-plugins/framework/api/celenv"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	apivalidation "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1/validation"
)

// Size limits of the Plugin CRD that package api/plugin/v1alpha1/validation
// does not check yet.
const (
	maxConditionLength  = 4096
	maxExpressionLength = 16384
	maxHooks            = 32
	maxReferences       = 32
	maxReferenceName    = 253
)

// Validate returns every problem of p, each with its field path: the rules
// of the Plugin CRD, then whether each condition and GuestDefinition
// expression compiles, type-checks and stays within env's cost limit. It is
// what New runs on every plugin and what kvpctl validate prints.
func Validate(p *pluginv1alpha1.Plugin, env *celenv.Env) field.ErrorList {
	errs := apivalidation.Plugin(p)
	errs = append(errs, limits(p)...)
	if env != nil {
		errs = append(errs, celProblems(p, env)...)
	}
	// Field order reads best: spec.condition, spec.launcherHooks[0]..., [1]...
	slices.SortStableFunc(errs, func(a, b *field.Error) int { return compareFieldPaths(a.Field, b.Field) })
	return errs
}

func celProblems(p *pluginv1alpha1.Plugin, env *celenv.Env) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	errs = append(errs, celErrors(spec.Child("condition"), p.Spec.Condition, env.Condition)...)
	for i := range p.Spec.LauncherHooks {
		h := &p.Spec.LauncherHooks[i]
		path := spec.Child("launcherHooks").Index(i)
		errs = append(errs, celErrors(path.Child("condition"), h.Condition, env.Condition)...)
		if h.CEL != nil && h.CEL.Expression != "" && len(h.CEL.Expression) <= maxExpressionLength {
			errs = append(errs, celErrors(path.Child("cel", "expression"), h.CEL.Expression, env.DomainTransform)...)
		}
	}
	for i := range p.Spec.NodeHooks {
		path := spec.Child("nodeHooks").Index(i)
		errs = append(errs, celErrors(path.Child("condition"), p.Spec.NodeHooks[i].Condition, env.Condition)...)
	}
	return errs
}

func celErrors[T any](path *field.Path, expr string, compile func(string) (T, error)) field.ErrorList {
	if expr == "" || len(expr) > maxExpressionLength {
		return nil
	}
	if _, err := compile(expr); err != nil {
		var ce *celenv.CompileError
		if errors.As(err, &ce) {
			return field.ErrorList{field.Invalid(path, truncate(expr), ce.Reason+": "+ce.Message)}
		}
		return field.ErrorList{field.Invalid(path, truncate(expr), err.Error())}
	}
	return nil
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

// truncate keeps long expressions from drowning the message.
func truncate(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}

func limits(p *pluginv1alpha1.Plugin) field.ErrorList {
	var errs field.ErrorList
	name := field.NewPath("metadata", "name")
	if p.Name == "" {
		errs = append(errs, field.Required(name, "the plugin name; sidecar sockets live in a directory named after it"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(p.Name) {
			errs = append(errs, field.Invalid(name, p.Name, msg))
		}
	}
	spec := field.NewPath("spec")
	tooLong := func(path *field.Path, s string, max int) {
		if len(s) > max {
			errs = append(errs, field.TooLong(path, truncate(s), max))
		}
	}
	tooMany := func(path *field.Path, n, max int) {
		if n > max {
			errs = append(errs, field.TooMany(path, n, max))
		}
	}
	tooLong(spec.Child("condition"), p.Spec.Condition, maxConditionLength)
	tooMany(spec.Child("launcherHooks"), len(p.Spec.LauncherHooks), maxHooks)
	for i, h := range p.Spec.LauncherHooks {
		path := spec.Child("launcherHooks").Index(i)
		tooLong(path.Child("condition"), h.Condition, maxConditionLength)
		if h.CEL != nil {
			tooLong(path.Child("cel", "expression"), h.CEL.Expression, maxExpressionLength)
		}
	}
	tooMany(spec.Child("nodeHooks"), len(p.Spec.NodeHooks), maxHooks)
	for i, h := range p.Spec.NodeHooks {
		tooLong(spec.Child("nodeHooks").Index(i).Child("condition"), h.Condition, maxConditionLength)
	}
	for _, r := range []struct {
		name string
		refs []pluginv1alpha1.AdmissionReference
	}{
		{"mutatingAdmissionPolicies", p.Spec.MutatingAdmissionPolicies},
		{"validatingAdmissionPolicies", p.Spec.ValidatingAdmissionPolicies},
		{"mutatingAdmissionWebhooks", p.Spec.MutatingAdmissionWebhooks},
		{"validatingAdmissionWebhooks", p.Spec.ValidatingAdmissionWebhooks},
	} {
		tooMany(spec.Child(r.name), len(r.refs), maxReferences)
		for i, ref := range r.refs {
			tooLong(spec.Child(r.name).Index(i).Child("name"), ref.Name, maxReferenceName)
		}
	}
	return errs
}
