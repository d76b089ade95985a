// SPDX-License-Identifier: Apache-2.0

package plugin

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kubevirt-plugins/framework/api/celenv"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/api/plugin/v1alpha1/validation"
)

// Path is where the webhook is served; the ValidatingWebhookConfiguration
// in deploy/controller points at it.
const Path = "/validate-plugin-kubevirt-io-v1alpha1-plugin"

// Validator checks Plugins on create and update.
type Validator struct {
	// CEL is the environment the launcher and the handler compile
	// expressions with; its cost limit applies. Required.
	CEL *celenv.Env
	// Reader lists the VMIs and VirtualMachines that require a Plugin
	// being deleted, to warn about them. Default: the manager's API
	// reader (no cache).
	Reader client.Reader
}

var _ admission.Validator[*pluginv1alpha1.Plugin] = (*Validator)(nil)

// SetupWebhookWithManager registers the validator on the manager's webhook
// server at Path.
func (v *Validator) SetupWebhookWithManager(mgr ctrl.Manager) error {
	if v.CEL == nil {
		return fmt.Errorf("plugin webhook: a CEL environment is required")
	}
	if v.Reader == nil {
		v.Reader = mgr.GetAPIReader()
	}
	return ctrl.NewWebhookManagedBy(mgr, &pluginv1alpha1.Plugin{}).
		WithValidator(v).
		WithValidatorCustomPath(Path).
		Complete()
}

// ValidateCreate rejects a Plugin with any invalid CEL expression.
func (v *Validator) ValidateCreate(_ context.Context, p *pluginv1alpha1.Plugin) (admission.Warnings, error) {
	return nil, v.validate(p)
}

// ValidateUpdate rejects a spec change that leaves an invalid CEL
// expression. Updates that keep the spec as it was (labels, finalizers) are
// let through, so that a Plugin stored before the webhook existed can still
// be relabelled and deleted.
func (v *Validator) ValidateUpdate(_ context.Context, old, p *pluginv1alpha1.Plugin) (admission.Warnings, error) {
	if equality.Semantic.DeepEqual(old.Spec, p.Spec) {
		return nil, nil
	}
	return nil, v.validate(p)
}

// ValidateDelete allows every deletion, with a warning naming the VMIs and
// VirtualMachines that require the Plugin (annotation
// plugin.kubevirt.io/required): they will not start without it.
func (v *Validator) ValidateDelete(ctx context.Context, p *pluginv1alpha1.Plugin) (admission.Warnings, error) {
	if v.Reader == nil {
		return nil, nil
	}
	return requiredByWarnings(ctx, v.Reader, p.Name), nil
}

func (v *Validator) validate(p *pluginv1alpha1.Plugin) error {
	errs := validation.CEL(p, v.CEL)
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(pluginv1alpha1.GroupVersion.WithKind("Plugin").GroupKind(), p.Name, errs)
}
