// SPDX-License-Identifier: Apache-2.0

package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/go-logr/logr"

	"github.com/kubevirt-plugins/framework/api/celenv"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

// planChecked plans, in the compiler's environment, the checked forms
// virt-handler put on the plugins (the annotation
// pluginv1alpha1.CheckedCELAnnotation, see handler-runtime's
// launcherplugins), so that compiling the plugins afterwards finds their
// expressions planned and parses none: the parser is most of what the first
// expression costs a launcher. A plugin without them (an older
// virt-handler, kvpctl) has its text compiled, as does an expression whose
// checked form does not plan here.
//
// It is the one place that says which the launcher got: one line per
// Pipeline, with how many expressions were planned from their checked form
// and how many are compiled from their text.
func planChecked(plugins []pluginv1alpha1.Plugin, c compiler, log logr.Logger) {
	var total, planned int
	var refused []error
	for i := range plugins {
		pl := &plugins[i]
		var set celenv.CheckedSet
		if data, ok := pl.Annotations[pluginv1alpha1.CheckedCELAnnotation]; ok {
			if err := json.Unmarshal([]byte(data), &set); err != nil {
				refused = append(refused, fmt.Errorf("plugin %q: %s: %w", pl.Name, pluginv1alpha1.CheckedCELAnnotation, err))
			}
		}
		plan := func(expr string, checked map[string][]byte, fromChecked func(string, []byte) error) {
			if expr == "" {
				return
			}
			total++
			form, ok := checked[expr]
			if !ok {
				return
			}
			if err := fromChecked(expr, form); err != nil {
				refused = append(refused, fmt.Errorf("plugin %q: %w", pl.Name, err))
				return
			}
			planned++
		}
		condition := func(expr string, form []byte) error { _, err := c.env.ConditionFromChecked(expr, form); return err }
		transform := func(expr string, form []byte) error {
			_, err := c.env.DomainTransformFromChecked(expr, form)
			return err
		}
		plan(pl.Spec.Condition, set.Conditions, condition)
		for _, h := range pl.Spec.LauncherHooks {
			plan(h.Condition, set.Conditions, condition)
			if h.CEL != nil {
				plan(h.CEL.Expression, set.Transforms, transform)
			}
		}
		for _, h := range pl.Spec.NodeHooks {
			plan(h.Condition, set.Conditions, condition)
		}
	}
	if total == 0 && len(refused) == 0 {
		return
	}
	kv := []any{"expressions", total, "plannedFromChecked", planned, "compiledFromText", total - planned}
	switch {
	case len(refused) > 0:
		log.Error(errors.Join(refused...), "CEL expressions: checked forms from virt-handler refused; compiling their text", kv...)
	case planned == total:
		log.Info("CEL expressions planned from the checked forms virt-handler handed over", kv...)
	default:
		log.Info("CEL expressions compiled from their text: virt-handler handed over no checked forms for them", kv...)
	}
}
