// Package validation checks Plugins against the structural rules of the
// Plugin CRD in plain Go, so that the runtimes can re-check what they are
// handed and tools can validate manifests without an API server. It does not
// compile CEL; see the celenv package for that.
package validation

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

// Plugin returns every structural problem of p, each with its field path.
func Plugin(p *v1alpha1.Plugin) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	errs = append(errs, failureStrategy(spec.Child("failureStrategy"), p.Spec.FailureStrategy)...)
	for i := range p.Spec.LauncherHooks {
		errs = append(errs, launcherHook(spec.Child("launcherHooks").Index(i), p.Name, &p.Spec.LauncherHooks[i])...)
	}
	for i := range p.Spec.NodeHooks {
		errs = append(errs, nodeHook(spec.Child("nodeHooks").Index(i), &p.Spec.NodeHooks[i])...)
	}
	refs := []struct {
		name string
		list []v1alpha1.AdmissionReference
	}{
		{"mutatingAdmissionPolicies", p.Spec.MutatingAdmissionPolicies},
		{"validatingAdmissionPolicies", p.Spec.ValidatingAdmissionPolicies},
		{"mutatingAdmissionWebhooks", p.Spec.MutatingAdmissionWebhooks},
		{"validatingAdmissionWebhooks", p.Spec.ValidatingAdmissionWebhooks},
	}
	for _, r := range refs {
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
			errs = append(errs, field.NotSupported(p.Child("hookPoint"), h.CEL.HookPoint, launcherPointNames()))
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
		errs = append(errs, socketPathErrors(p.Child("socketPath"), plugin, h.Sidecar.SocketPath)...)
		errs = append(errs, hookPoints(p.Child("permittedHooks"), h.Sidecar.PermittedHooks, validLauncherPoint, launcherPointNames())...)
	}
	errs = append(errs, failureStrategy(path.Child("failureStrategy"), h.FailureStrategy)...)
	if h.Timeout != nil && h.Timeout.Duration <= 0 {
		errs = append(errs, field.Invalid(path.Child("timeout"), h.Timeout.Duration.String(), "timeout must be a positive duration such as 10s"))
	}
	return errs
}

func nodeHook(path *field.Path, h *v1alpha1.NodeHook) field.ErrorList {
	var errs field.ErrorList
	if len(h.Socket) > v1alpha1.MaxSocketPathLength {
		errs = append(errs, field.TooLong(path.Child("socket"), h.Socket, v1alpha1.MaxSocketPathLength))
	} else if err := nodeSocket(h.Socket); err != nil {
		errs = append(errs, field.Invalid(path.Child("socket"), h.Socket, err.Error()))
	}
	errs = append(errs, hookPoints(path.Child("permittedHooks"), h.PermittedHooks, validNodePoint, nodePointNames())...)
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
	switch s {
	case "", v1alpha1.Fail, v1alpha1.Ignore:
		return nil
	}
	return field.ErrorList{field.NotSupported(path, s, []string{string(v1alpha1.Fail), string(v1alpha1.Ignore)})}
}

func socketPathErrors(path *field.Path, plugin, socket string) field.ErrorList {
	if len(socket) > v1alpha1.MaxSocketPathLength {
		return field.ErrorList{field.TooLong(path, socket, v1alpha1.MaxSocketPathLength)}
	}
	if err := SocketPath(plugin, socket); err != nil {
		return field.ErrorList{field.Invalid(path, socket, err.Error())}
	}
	return nil
}

// SocketPath checks a sidecar socket path of the named plugin: under
// /var/run/kubevirt-plugin/<plugin>/, ending with .sock, at most 108 bytes,
// without "..", a repeated or a trailing "/". It does not look at the file
// system; symlinks are checked where the socket is dialed.
func SocketPath(plugin, path string) error {
	dir := v1alpha1.PluginDir(plugin)
	switch {
	case len(path) > v1alpha1.MaxSocketPathLength:
		return fmt.Errorf("is %d bytes long, more than the %d a Unix socket path may have", len(path), v1alpha1.MaxSocketPathLength)
	case strings.Contains(path, ".."):
		return fmt.Errorf("must not contain '..'")
	case strings.Contains(path, "//"):
		return fmt.Errorf("must not contain a repeated '/'")
	case strings.HasSuffix(path, "/"):
		return fmt.Errorf("must not end with '/'")
	case !strings.HasSuffix(path, ".sock"):
		return fmt.Errorf("must end with .sock")
	case !strings.HasPrefix(path, dir) || len(path) == len(dir):
		return fmt.Errorf("must be inside the plugin's own directory %s", dir)
	}
	return nil
}

func nodeSocket(path string) error {
	switch {
	case path == "":
		return fmt.Errorf("must be set")
	case len(path) > v1alpha1.MaxSocketPathLength:
		return fmt.Errorf("is %d bytes long, more than the %d a Unix socket path may have", len(path), v1alpha1.MaxSocketPathLength)
	case !strings.HasPrefix(path, "/"):
		return fmt.Errorf("must be an absolute path")
	case strings.Contains(path, ".."):
		return fmt.Errorf("must not contain '..'")
	case strings.Contains(path, "//"):
		return fmt.Errorf("must not contain a repeated '/'")
	case strings.HasSuffix(path, "/"):
		return fmt.Errorf("must not end with '/'")
	}
	return nil
}

func validLauncherPoint(p v1alpha1.LauncherHookPoint) bool {
	for _, q := range v1alpha1.LauncherHookPoints {
		if p == q {
			return true
		}
	}
	return false
}

func validNodePoint(p v1alpha1.NodeHookPoint) bool {
	for _, q := range v1alpha1.NodeHookPoints {
		if p == q {
			return true
		}
	}
	return false
}

func launcherPointNames() []string {
	out := make([]string, len(v1alpha1.LauncherHookPoints))
	for i, p := range v1alpha1.LauncherHookPoints {
		out[i] = string(p)
	}
	return out
}

func nodePointNames() []string {
	out := make([]string, len(v1alpha1.NodeHookPoints))
	for i, p := range v1alpha1.NodeHookPoints {
		out[i] = string(p)
	}
	return out
}
