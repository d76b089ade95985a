// SPDX-License-Identifier: Apache-2.0

// Package validation checks Plugins in plain Go: Plugin applies the
// structural rules of the Plugin CRD, CEL compiles every expression with the
// shared environment, All does both. The runtimes re-check what they are
// handed with it, the plugin-controller's webhook and status use it, and
// kvpctl validates manifests with it before they reach an API server.
package validation

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/api/socketpath"
)

// Bounds the CRD schema sets on sizes, repeated here for manifests that
// never went through an API server.
const (
	maxConditionLength  = 4096
	maxExpressionLength = 16384
	maxReferences       = 32
	maxReferenceName    = 253
)

// Plugin returns every structural problem of p, each with its field path:
// the rules the CRD schema enforces, without compiling CEL (see CEL).
func Plugin(p *v1alpha1.Plugin) field.ErrorList {
	errs := limits(p)
	spec := field.NewPath("spec")
	errs = append(errs, failureStrategy(spec.Child("failureStrategy"), p.Spec.FailureStrategy)...)
	for i := range p.Spec.LauncherHooks {
		errs = append(errs, launcherHook(spec.Child("launcherHooks").Index(i), p.Name, &p.Spec.LauncherHooks[i])...)
	}
	for i := range p.Spec.NodeHooks {
		errs = append(errs, nodeHook(spec.Child("nodeHooks").Index(i), &p.Spec.NodeHooks[i])...)
	}
	for _, r := range admissionReferences(p) {
		seen := map[string]bool{}
		for i, ref := range r.list {
			path := spec.Child(r.name).Index(i).Child("name")
			switch {
			case ref.Name == "":
				errs = append(errs, field.Required(path, "name of the referenced object"))
			case seen[ref.Name]:
				errs = append(errs, field.Duplicate(path, ref.Name))
			}
			seen[ref.Name] = true
		}
	}
	return errs
}

func launcherHook(path *field.Path, plugin string, h *v1alpha1.LauncherHook) field.ErrorList {
	var errs field.ErrorList
	switch {
	case h.CEL != nil && h.Sidecar != nil:
		errs = append(errs, field.Invalid(path, "cel and sidecar", "exactly one of cel or sidecar must be set"))
	case h.CEL == nil && h.Sidecar == nil:
		errs = append(errs, field.Required(path, "exactly one of cel or sidecar must be set"))
	}
	if h.CEL != nil {
		p := path.Child("cel")
		switch {
		case !validLauncherPoint(h.CEL.HookPoint):
			errs = append(errs, field.NotSupported(p.Child("hookPoint"), h.CEL.HookPoint, names(v1alpha1.LauncherHookPoints)))
		case h.CEL.HookPoint != v1alpha1.GuestDefinition:
			errs = append(errs, field.Invalid(p.Child("hookPoint"), h.CEL.HookPoint,
				"CEL hooks are supported only at hook point GuestDefinition; use a sidecar for PreBoot and PreMigrationSource"))
		}
		if h.CEL.Expression == "" {
			errs = append(errs, field.Required(p.Child("expression"), "a CEL expression returning Domain{...}"))
		}
		if h.Timeout != nil {
			errs = append(errs, field.Forbidden(path.Child("timeout"), "timeout applies only to sidecar hooks; CEL hooks run inline and have none"))
		}
	}
	if h.Sidecar != nil {
		p := path.Child("sidecar")
		errs = append(errs, socketField(p.Child("socketPath"), h.Sidecar.SocketPath, SocketPath(plugin, h.Sidecar.SocketPath))...)
		errs = append(errs, hookPoints(p.Child("permittedHooks"), h.Sidecar.PermittedHooks, validLauncherPoint, names(v1alpha1.LauncherHookPoints))...)
	}
	errs = append(errs, failureStrategy(path.Child("failureStrategy"), h.FailureStrategy)...)
	if h.Timeout != nil && h.Timeout.Duration <= 0 {
		errs = append(errs, field.Invalid(path.Child("timeout"), h.Timeout.Duration.String(), "timeout must be a positive duration such as 10s"))
	}
	return errs
}

func nodeHook(path *field.Path, h *v1alpha1.NodeHook) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, socketField(path.Child("socket"), h.Socket, nodeSocket(h.Socket))...)
	errs = append(errs, hookPoints(path.Child("permittedHooks"), h.PermittedHooks, validNodePoint, names(v1alpha1.NodeHookPoints))...)
	errs = append(errs, failureStrategy(path.Child("failureStrategy"), h.FailureStrategy)...)
	if h.Timeout != nil && h.Timeout.Duration <= 0 {
		errs = append(errs, field.Invalid(path.Child("timeout"), h.Timeout.Duration.String(), "timeout must be a positive duration such as 10s"))
	}
	return errs
}

// hookPoints checks a permittedHooks list: not empty, known points, no
// duplicates.
func hookPoints[P ~string](path *field.Path, points []P, valid func(P) bool, names []string) field.ErrorList {
	var errs field.ErrorList
	if len(points) == 0 {
		return append(errs, field.Required(path, "must list at least 1 hook point"))
	}
	seen := map[P]bool{}
	for i, p := range points {
		switch {
		case !valid(p):
			errs = append(errs, field.NotSupported(path.Index(i), p, names))
		case seen[p]:
			errs = append(errs, field.Duplicate(path.Index(i), p))
		}
		seen[p] = true
	}
	return errs
}

func failureStrategy(path *field.Path, s v1alpha1.FailureStrategy) field.ErrorList {
	if s == "" || slices.Contains(v1alpha1.FailureStrategies, s) {
		return nil
	}
	return field.ErrorList{field.NotSupported(path, s, names(v1alpha1.FailureStrategies))}
}

// socketField reports the error of a socket path check as the field's:
// TooLong for a path longer than a Unix socket path may be (the check wraps
// socketpath.ErrTooLong), Invalid otherwise.
func socketField(path *field.Path, socket string, err error) field.ErrorList {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, socketpath.ErrTooLong):
		return field.ErrorList{field.TooLong(path, socket, v1alpha1.MaxSocketPathLength)}
	}
	return field.ErrorList{field.Invalid(path, socket, err.Error())}
}

// SocketPath checks a sidecar socket path of the named plugin: under
// /var/run/kubevirt-plugin/<plugin>/, ending with .sock, and of the shape
// every socket path has (socketpath.CheckShape: at most 108 bytes, without
// a control character, "..", a "." component, a repeated or a trailing
// "/"). It does not look at the file system; symlinks are checked where
// the socket is dialed.
func SocketPath(plugin, path string) error {
	if err := socketpath.CheckShape(path); err != nil {
		return err
	}
	dir := v1alpha1.PluginDir(plugin)
	switch {
	case !strings.HasSuffix(path, ".sock"):
		return fmt.Errorf("must end with .sock")
	case !strings.HasPrefix(path, dir) || len(path) == len(dir):
		return fmt.Errorf("must be inside the plugin's own directory %s", dir)
	}
	return nil
}

// nodeSocket checks a node hook socket path: set, absolute, and of the
// shape every socket path has (socketpath.CheckShape). A path that is too
// long is reported as such even when it is also relative.
func nodeSocket(path string) error {
	if path == "" {
		return fmt.Errorf("must be set")
	}
	err := socketpath.CheckShape(path)
	if !errors.Is(err, socketpath.ErrTooLong) && !strings.HasPrefix(path, "/") {
		return fmt.Errorf("must be an absolute path")
	}
	return err
}

func validLauncherPoint(p v1alpha1.LauncherHookPoint) bool {
	return slices.Contains(v1alpha1.LauncherHookPoints, p)
}

func validNodePoint(p v1alpha1.NodeHookPoint) bool {
	return slices.Contains(v1alpha1.NodeHookPoints, p)
}

// names returns the enumerated values as the strings an error lists.
func names[S ~string](values []S) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

// Counts returns the errors of p's lists that are longer than the schema
// allows: at most v1alpha1.MaxHooks launcher hooks and node hooks, at most
// 32 references of each kind. It looks at nothing else, so it is cheap
// whatever the size of p: CEL and All call it first and, when it finds a
// list too long, refuse p by count alone, before anything is compiled.
func Counts(p *v1alpha1.Plugin) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	tooMany := func(name string, n, max int) {
		if n > max {
			errs = append(errs, field.TooMany(spec.Child(name), n, max))
		}
	}
	tooMany("launcherHooks", len(p.Spec.LauncherHooks), v1alpha1.MaxHooks)
	tooMany("nodeHooks", len(p.Spec.NodeHooks), v1alpha1.MaxHooks)
	for _, r := range admissionReferences(p) {
		tooMany(r.name, len(r.list), maxReferences)
	}
	return errs
}

// limits checks the name and the size bounds of the schema.
func limits(p *v1alpha1.Plugin) field.ErrorList {
	errs := Counts(p)
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
			errs = append(errs, field.TooLong(path, field.OmitValueType{}, max))
		}
	}
	tooLong(spec.Child("condition"), p.Spec.Condition, maxConditionLength)
	for i, h := range p.Spec.LauncherHooks {
		path := spec.Child("launcherHooks").Index(i)
		tooLong(path.Child("condition"), h.Condition, maxConditionLength)
		if h.CEL != nil {
			tooLong(path.Child("cel", "expression"), h.CEL.Expression, maxExpressionLength)
		}
	}
	for i, h := range p.Spec.NodeHooks {
		tooLong(spec.Child("nodeHooks").Index(i).Child("condition"), h.Condition, maxConditionLength)
	}
	for _, r := range admissionReferences(p) {
		for i, ref := range r.list {
			tooLong(spec.Child(r.name).Index(i).Child("name"), ref.Name, maxReferenceName)
		}
	}
	return errs
}

type referenceList struct {
	name string
	list []v1alpha1.AdmissionReference
}

func admissionReferences(p *v1alpha1.Plugin) []referenceList {
	return []referenceList{
		{"mutatingAdmissionPolicies", p.Spec.MutatingAdmissionPolicies},
		{"validatingAdmissionPolicies", p.Spec.ValidatingAdmissionPolicies},
		{"mutatingAdmissionWebhooks", p.Spec.MutatingAdmissionWebhooks},
		{"validatingAdmissionWebhooks", p.Spec.ValidatingAdmissionWebhooks},
	}
}
