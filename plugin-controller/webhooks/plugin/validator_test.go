// SPDX-License-Identifier: Apache-2.0

package plugin

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt-plugins/framework/api/celenv"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

func newValidator(t *testing.T) *Validator {
	t.Helper()
	env, err := celenv.New(celenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &Validator{CEL: env}
}

func plugin(condition string) *pluginv1alpha1.Plugin {
	return &pluginv1alpha1.Plugin{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: pluginv1alpha1.PluginSpec{Condition: condition}}
}

func TestCreateWithInvalidCELIsAnInvalidErrorListingEachField(t *testing.T) {
	v := newValidator(t)
	p := plugin(`vmi.Name`)
	p.Spec.LauncherHooks = []pluginv1alpha1.LauncherHook{{CEL: &pluginv1alpha1.CELHook{
		HookPoint: pluginv1alpha1.GuestDefinition, Expression: `Domain{Bogus: 1}`,
	}}}
	_, err := v.ValidateCreate(t.Context(), p)
	if !apierrors.IsInvalid(err) {
		t.Fatalf("error %v is not an Invalid status error", err)
	}
	causes := err.(apierrors.APIStatus).Status().Details.Causes
	var fields []string
	for _, c := range causes {
		fields = append(fields, c.Field)
	}
	if got := strings.Join(fields, ","); got != "spec.condition,spec.launcherHooks[0].cel.expression" {
		t.Fatalf("causes name %q", got)
	}
}

func TestCreateWithValidCELIsAllowed(t *testing.T) {
	if _, err := newValidator(t).ValidateCreate(t.Context(), plugin(`vmi.Name == "x"`)); err != nil {
		t.Fatal(err)
	}
}

func TestUpdateKeepingAnInvalidSpecIsAllowedSoOldPluginsCanBeDeleted(t *testing.T) {
	v := newValidator(t)
	old, updated := plugin(`vmi.Name`), plugin(`vmi.Name`)
	updated.Finalizers = nil
	updated.Labels = map[string]string{"relabelled": "yes"}
	if _, err := v.ValidateUpdate(t.Context(), old, updated); err != nil {
		t.Fatalf("metadata-only update of a stored invalid Plugin rejected: %v", err)
	}
	changed := plugin(`vmi.Namespace`)
	if _, err := v.ValidateUpdate(t.Context(), old, changed); !apierrors.IsInvalid(err) {
		t.Fatalf("spec change to another invalid condition: error %v, want Invalid", err)
	}
}
