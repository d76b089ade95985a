// SPDX-License-Identifier: Apache-2.0

package required

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	kubevirtv1 "kubevirt.io/api/core/v1"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

// Annotation on a VMI lists, comma separated, the names of the Plugins it
// requires.
const Annotation = "plugin.kubevirt.io/required"

// Names returns the Plugin names vmi requires, in the annotation's order,
// blanks trimmed and repeats dropped; none without the annotation. A name
// that is not a valid Plugin name is an error naming the annotation.
func Names(vmi *kubevirtv1.VirtualMachineInstance) ([]string, error) {
	value, ok := vmi.Annotations[Annotation]
	if !ok {
		return nil, nil
	}
	var names []string
	seen := map[string]bool{}
	for n := range strings.SplitSeq(value, ",") {
		n = strings.TrimSpace(n)
		if n == "" || seen[n] {
			continue
		}
		if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
			return nil, fmt.Errorf("VMI %s/%s: annotation %s: %q is not a Plugin name: %s",
				vmi.Namespace, vmi.Name, Annotation, n, strings.Join(errs, "; "))
		}
		seen[n] = true
		names = append(names, n)
	}
	return names, nil
}

// Reason says why a required Plugin is not satisfied.
type Reason string

const (
	// Missing: no Plugin of that name exists, or it is being deleted.
	Missing Reason = "Missing"
	// NotReady: the Plugin's Ready condition is not True for its current
	// generation.
	NotReady Reason = "NotReady"
	// NotSelected: the Plugin's condition does not hold for the VMI, or
	// cannot be evaluated.
	NotSelected Reason = "NotSelected"
)

// Unmet is a required Plugin that is not satisfied.
type Unmet struct {
	Plugin string
	Reason Reason
	// Detail says what was found.
	Detail string
}

func (u Unmet) String() string {
	return fmt.Sprintf("plugin %q %s: %s", u.Plugin, u.Reason, u.Detail)
}

// Error is the refusal to run a VMI whose required Plugins are not all
// satisfied.
type Error struct {
	// VMI is namespace/name.
	VMI   string
	Unmet []Unmet
}

func (e *Error) Error() string {
	parts := make([]string, len(e.Unmet))
	for i, u := range e.Unmet {
		parts[i] = u.String()
	}
	return fmt.Sprintf("VMI %s requires plugins (annotation %s) that are not satisfied: %s", e.VMI, Annotation, strings.Join(parts, "; "))
}

// Options configure Check.
type Options struct {
	// CheckReady requires the Ready condition: the cluster's view. Leave it
	// false for Plugins read from files, which carry no status.
	CheckReady bool
	// EvalCondition evaluates a Plugin condition for the VMI (an empty
	// condition holds). Required when a required Plugin has a condition.
	EvalCondition func(ctx context.Context, expr string, vmi *kubevirtv1.VirtualMachineInstance) (bool, error)
}

// Check returns nil when every Plugin vmi requires is satisfied by plugins,
// an *Error listing each one that is not otherwise, and any other error
// when the annotation cannot be read.
func Check(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, plugins []*pluginv1alpha1.Plugin, opts Options) error {
	names, err := Names(vmi)
	if err != nil || len(names) == 0 {
		return err
	}
	byName := make(map[string]*pluginv1alpha1.Plugin, len(plugins))
	for _, p := range plugins {
		byName[p.Name] = p
	}
	var unmet []Unmet
	for _, n := range names {
		if u, ok := check(ctx, vmi, n, byName[n], opts); !ok {
			unmet = append(unmet, u)
		}
	}
	if len(unmet) == 0 {
		return nil
	}
	return &Error{VMI: vmi.Namespace + "/" + vmi.Name, Unmet: unmet}
}

func check(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, name string, p *pluginv1alpha1.Plugin, opts Options) (Unmet, bool) {
	unmet := func(r Reason, format string, args ...any) (Unmet, bool) {
		return Unmet{Plugin: name, Reason: r, Detail: fmt.Sprintf(format, args...)}, false
	}
	switch {
	case p == nil:
		return unmet(Missing, "no Plugin of that name exists")
	case p.DeletionTimestamp != nil:
		return unmet(Missing, "the Plugin is being deleted")
	}
	if opts.CheckReady {
		if detail := notReady(p); detail != "" {
			return unmet(NotReady, "%s", detail)
		}
	}
	if p.Spec.Condition == "" {
		return Unmet{}, true
	}
	if opts.EvalCondition == nil {
		return unmet(NotSelected, "its condition cannot be evaluated here: no CEL environment given")
	}
	ok, err := opts.EvalCondition(ctx, p.Spec.Condition, vmi)
	switch {
	case err != nil:
		return unmet(NotSelected, "its condition %q cannot be evaluated for this VMI: %v", p.Spec.Condition, err)
	case !ok:
		return unmet(NotSelected, "its condition %q is false for this VMI", p.Spec.Condition)
	}
	return Unmet{}, true
}

// notReady says why the Plugin is not Ready for its generation, or "".
func notReady(p *pluginv1alpha1.Plugin) string {
	c := meta.FindStatusCondition(p.Status.Conditions, pluginv1alpha1.ConditionReady)
	switch {
	case c == nil:
		return "it has no Ready condition yet (the plugin-controller has not reported on it)"
	case c.Status != metav1.ConditionTrue:
		return fmt.Sprintf("Ready is %s: %s: %s", c.Status, c.Reason, c.Message)
	case c.ObservedGeneration != p.Generation:
		return fmt.Sprintf("Ready describes generation %d, the Plugin is at generation %d", c.ObservedGeneration, p.Generation)
	}
	return ""
}
