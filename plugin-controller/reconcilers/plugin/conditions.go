// SPDX-License-Identifier: Apache-2.0

package plugin

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

// Condition reasons written by the reconciler.
const (
	ReasonExpressionsValid   = "ExpressionsValid"
	ReasonInvalidExpressions = "InvalidExpressions"
	ReasonReferencesFound    = "ReferencesFound"
	ReasonReferencesMissing  = "ReferencesMissing"
	// ReasonKindNotServed: a referenced admission kind is not served by
	// the API server (MutatingAdmissionPolicy before Kubernetes 1.36).
	ReasonKindNotServed = "KindNotServed"
	ReasonReady         = "Ready"
	ReasonNotAccepted   = "NotAccepted"
)

// maxMessageLength is the API's limit on a condition message.
const maxMessageLength = 32768

// observation is what one reconcile found out about a Plugin.
type observation struct {
	// celErrors are the rejected CEL expressions, with field paths.
	celErrors field.ErrorList
	// missing are the referenced admission objects that do not exist.
	missing []reference
	// unserved are the references to kinds the API server does not serve.
	unserved []reference
}

// desiredStatus is the status the Plugin should have given what was
// observed. Conditions whose status does not change keep their
// lastTransitionTime; now stamps the ones that do.
func desiredStatus(p *pluginv1alpha1.Plugin, obs observation, now metav1.Time) pluginv1alpha1.PluginStatus {
	st := pluginv1alpha1.PluginStatus{
		ObservedGeneration: p.Generation,
		Conditions:         append([]metav1.Condition(nil), p.Status.Conditions...),
		LauncherHooks:      int32(len(p.Spec.LauncherHooks)),
		NodeHooks:          int32(len(p.Spec.NodeHooks)),
	}
	accepted := metav1.Condition{
		Type: pluginv1alpha1.ConditionAccepted, Status: metav1.ConditionTrue,
		Reason: ReasonExpressionsValid, Message: "every CEL expression compiles, has the right result type and is within the cost limit",
	}
	if len(obs.celErrors) > 0 {
		accepted.Status, accepted.Reason = metav1.ConditionFalse, ReasonInvalidExpressions
		accepted.Message = celMessage(obs.celErrors)
	}
	resolved := metav1.Condition{
		Type: pluginv1alpha1.ConditionAdmissionReferencesResolved, Status: metav1.ConditionTrue,
		Reason: ReasonReferencesFound, Message: "every referenced admission object exists",
	}
	switch {
	case len(obs.unserved) > 0:
		resolved.Status, resolved.Reason = metav1.ConditionFalse, ReasonKindNotServed
		resolved.Message = unservedMessage(obs.unserved, obs.missing)
	case len(obs.missing) > 0:
		resolved.Status, resolved.Reason = metav1.ConditionFalse, ReasonReferencesMissing
		resolved.Message = missingMessage(obs.missing)
	}
	ready := metav1.Condition{
		Type: pluginv1alpha1.ConditionReady, Status: metav1.ConditionTrue,
		Reason: ReasonReady, Message: "the plugin is accepted and its admission references resolve",
	}
	switch {
	case accepted.Status != metav1.ConditionTrue:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, ReasonNotAccepted, accepted.Message
	case resolved.Status != metav1.ConditionTrue:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, resolved.Reason, resolved.Message
	}
	for _, c := range []metav1.Condition{accepted, resolved, ready} {
		c.ObservedGeneration = p.Generation
		c.LastTransitionTime = now
		meta.SetStatusCondition(&st.Conditions, c)
	}
	return st
}

func celMessage(errs field.ErrorList) string {
	parts := make([]string, 0, len(errs))
	for _, e := range errs {
		parts = append(parts, e.Field+": "+e.Detail)
	}
	return truncate(fmt.Sprintf("%d invalid CEL expression(s): %s", len(errs), strings.Join(parts, "; ")))
}

func missingMessage(missing []reference) string {
	parts := make([]string, 0, len(missing))
	for _, r := range missing {
		parts = append(parts, r.String())
	}
	return truncate("referenced admission objects not found: " + strings.Join(parts, ", "))
}

// unservedMessage names each kind the server does not serve with the
// references to it, then the missing objects of served kinds, if any.
func unservedMessage(unserved, missing []reference) string {
	var kinds []string
	byKind := map[string][]string{}
	for _, r := range unserved {
		if _, seen := byKind[r.Kind]; !seen {
			kinds = append(kinds, r.Kind)
		}
		byKind[r.Kind] = append(byKind[r.Kind], r.Name)
	}
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %s (referenced: %s)", admissionGroupVersion, k, strings.Join(byKind[k], ", ")))
	}
	msg := "the API server does not serve " + strings.Join(parts, "; ")
	if len(missing) > 0 {
		msg += "; " + missingMessage(missing)
	}
	return truncate(msg)
}

func truncate(s string) string {
	if len(s) <= maxMessageLength {
		return s
	}
	const ellipsis = "..."
	return strings.ToValidUTF8(s[:maxMessageLength-len(ellipsis)], "") + ellipsis
}

// transition is a condition whose status changed, or that appeared.
type transition struct {
	condition metav1.Condition
	// from is the previous status, empty when the condition is new.
	from metav1.ConditionStatus
}

// transitions lists the conditions of updated whose status differs from the
// same type in previous, in the order of updated. A condition that appears
// for the first time counts when it is not True, or when it is Ready: a new,
// healthy Plugin gets one Event, not three.
func transitions(previous, updated []metav1.Condition) []transition {
	var out []transition
	for _, c := range updated {
		old := meta.FindStatusCondition(previous, c.Type)
		switch {
		case old == nil:
			if c.Status != metav1.ConditionTrue || c.Type == pluginv1alpha1.ConditionReady {
				out = append(out, transition{condition: c})
			}
		case old.Status != c.Status:
			out = append(out, transition{condition: c, from: old.Status})
		}
	}
	return out
}
