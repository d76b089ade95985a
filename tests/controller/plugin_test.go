// SPDX-License-Identifier: Apache-2.0

package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/tests/framework/poll"
)

func celHook(expr string) pluginv1alpha1.LauncherHook {
	return pluginv1alpha1.LauncherHook{CEL: &pluginv1alpha1.CELHook{HookPoint: pluginv1alpha1.GuestDefinition, Expression: expr}}
}

func sidecarHook(plugin string) pluginv1alpha1.LauncherHook {
	return pluginv1alpha1.LauncherHook{Sidecar: &pluginv1alpha1.SidecarHook{
		SocketPath:     pluginv1alpha1.PluginDir(plugin) + "hook.sock",
		PermittedHooks: []pluginv1alpha1.LauncherHookPoint{pluginv1alpha1.GuestDefinition, pluginv1alpha1.PreBoot},
	}}
}

func newPlugin(name string, spec pluginv1alpha1.PluginSpec) *pluginv1alpha1.Plugin {
	return &pluginv1alpha1.Plugin{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
}

func deleteAfter(t *testing.T, obj client.Object) {
	t.Cleanup(func() {
		if err := admin.Delete(context.WithoutCancel(t.Context()), obj); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %s: %v", obj.GetName(), err)
		}
	})
}

func TestInvalidCELIsRejectedAtCreateWithTheFieldPath(t *testing.T) {
	const quadratic = `vmi.Spec.Domain.Devices.Disks.all(d, vmi.Spec.Domain.Devices.Disks.all(e, d.Name != e.Name))`
	cases := []struct {
		name string
		spec pluginv1alpha1.PluginSpec
		// want are substrings of the denial, in the order they appear.
		want []string
	}{
		{
			name: "condition that is not a bool",
			spec: pluginv1alpha1.PluginSpec{Condition: `vmi.Name`, LauncherHooks: []pluginv1alpha1.LauncherHook{celHook(`Domain{}`)}},
			want: []string{"spec.condition", "type error", "bool"},
		},
		{
			name: "GuestDefinition expression that is not a Domain",
			spec: pluginv1alpha1.PluginSpec{LauncherHooks: []pluginv1alpha1.LauncherHook{celHook(`Domain{}`), celHook(`"text"`)}},
			want: []string{"spec.launcherHooks[1].cel.expression", "type error"},
		},
		{
			name: "unknown field name in Domain",
			spec: pluginv1alpha1.PluginSpec{LauncherHooks: []pluginv1alpha1.LauncherHook{celHook(`Domain{CPU: DomainCPU{Mood: "host-passthrough"}}`)}},
			want: []string{"spec.launcherHooks[0].cel.expression", "Mood"},
		},
		{
			name: "syntax error in a node hook condition",
			spec: pluginv1alpha1.PluginSpec{NodeHooks: []pluginv1alpha1.NodeHook{{
				Socket: "/var/run/kubevirt/hooks/n.sock", PermittedHooks: []pluginv1alpha1.NodeHookPoint{pluginv1alpha1.PreVMStart},
				Condition: `vmi.Labels[`,
			}}},
			want: []string{"spec.nodeHooks[0].condition", "syntax error"},
		},
		{
			name: "estimated cost over the limit",
			spec: pluginv1alpha1.PluginSpec{Condition: quadratic},
			want: []string{"spec.condition", "cost error", "exceeds the cost limit 1000000"},
		},
		{
			name: "every problem listed",
			spec: pluginv1alpha1.PluginSpec{
				Condition: `1`,
				LauncherHooks: []pluginv1alpha1.LauncherHook{
					{CEL: celHook(`Domain{}`).CEL, Condition: `vmi.Nope`},
					celHook(`vmi`),
				},
			},
			want: []string{"spec.condition", "spec.launcherHooks[0].condition", "spec.launcherHooks[1].cel.expression"},
		},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlugin(fmt.Sprintf("invalid-cel-%d", i), tc.spec)
			err := admin.Create(t.Context(), p)
			if err == nil {
				deleteAfter(t, p)
				t.Fatal("the Plugin was admitted")
			}
			if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
				t.Errorf("error %v is not a denial (Invalid or Forbidden)", err)
			}
			msg := err.Error()
			t.Logf("denial: %s", msg)
			if !strings.Contains(msg, "plugins.plugin.kubevirt.io") {
				t.Errorf("denial %q does not come from the Plugin webhook", msg)
			}
			rest := msg
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("denial %q lacks %q (in order: %q)", msg, w, tc.want)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}

func TestInvalidCELIsRejectedAtUpdate(t *testing.T) {
	ctx := t.Context()
	p := newPlugin("update-to-invalid", pluginv1alpha1.PluginSpec{Condition: `true`})
	if err := admin.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	deleteAfter(t, p)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		p.Spec.Condition = `"x"`
		return admin.Update(ctx, p)
	})
	if err == nil || !strings.Contains(err.Error(), "spec.condition") {
		t.Fatalf("update to a non-bool condition: error %v, want a denial naming spec.condition", err)
	}
}

// waitForStatus polls the Plugin until check accepts its status.
func waitForStatus(t *testing.T, name string, check func(*pluginv1alpha1.Plugin) error) *pluginv1alpha1.Plugin {
	t.Helper()
	var p pluginv1alpha1.Plugin
	poll.Until(t, "Plugin "+name+" has the status wanted", 30*time.Second, func() error {
		if err := admin.Get(t.Context(), client.ObjectKey{Name: name}, &p); err != nil {
			return err
		}
		return check(&p)
	})
	return &p
}

func conditionIs(p *pluginv1alpha1.Plugin, typ string, status metav1.ConditionStatus) error {
	c := meta.FindStatusCondition(p.Status.Conditions, typ)
	switch {
	case p.Status.ObservedGeneration != p.Generation:
		return fmt.Errorf("observedGeneration %d, generation %d", p.Status.ObservedGeneration, p.Generation)
	case c == nil:
		return fmt.Errorf("no %s condition in %+v", typ, p.Status.Conditions)
	case c.Status != status:
		return fmt.Errorf("%s is %s (%s: %s), want %s", typ, c.Status, c.Reason, c.Message, status)
	}
	return nil
}

func TestValidPluginBecomesReadyAtItsGeneration(t *testing.T) {
	ctx := t.Context()
	p := newPlugin("valid-plugin", pluginv1alpha1.PluginSpec{
		Condition: `"example.com/tuning" in vmi.Labels`,
		LauncherHooks: []pluginv1alpha1.LauncherHook{
			celHook(`Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`),
			sidecarHook("valid-plugin"),
		},
	})
	if err := admin.Create(ctx, p); err != nil {
		t.Fatalf("valid Plugin rejected: %v", err)
	}
	deleteAfter(t, p)
	got := waitForStatus(t, p.Name, func(p *pluginv1alpha1.Plugin) error {
		return conditionIs(p, pluginv1alpha1.ConditionReady, metav1.ConditionTrue)
	})
	for _, typ := range []string{pluginv1alpha1.ConditionAccepted, pluginv1alpha1.ConditionAdmissionReferencesResolved} {
		if err := conditionIs(got, typ, metav1.ConditionTrue); err != nil {
			t.Error(err)
		}
	}
	if got.Status.LauncherHooks != 2 || got.Status.NodeHooks != 0 {
		t.Errorf("hook counts %d/%d, want 2 launcher hooks and 0 node hooks", got.Status.LauncherHooks, got.Status.NodeHooks)
	}

	// A spec change is observed at the new generation.
	got.Spec.NodeHooks = []pluginv1alpha1.NodeHook{{
		Socket: "/var/run/kubevirt/hooks/valid.sock", PermittedHooks: []pluginv1alpha1.NodeHookPoint{pluginv1alpha1.PostVMStart},
		Condition: `vmi.Name != ""`,
	}}
	nodeHooks := got.Spec.NodeHooks
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(got), got); err != nil {
			return err
		}
		got.Spec.NodeHooks = nodeHooks
		return admin.Update(ctx, got)
	}); err != nil {
		t.Fatal(err)
	}
	updated := waitForStatus(t, p.Name, func(p *pluginv1alpha1.Plugin) error {
		if p.Generation < 2 {
			return fmt.Errorf("generation %d", p.Generation)
		}
		return conditionIs(p, pluginv1alpha1.ConditionReady, metav1.ConditionTrue)
	})
	if updated.Status.NodeHooks != 1 {
		t.Errorf("nodeHooks %d after adding one, want 1", updated.Status.NodeHooks)
	}

	// The transition to Ready was announced with an Event.
	poll.Until(t, "an Event announces Ready", 30*time.Second, func() error {
		var events eventsv1.EventList
		if err := admin.List(ctx, &events); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Regarding.Name == p.Name && e.Regarding.Kind == "Plugin" && e.Reason == "Ready" && strings.Contains(e.Note, "Ready is True") {
				return nil
			}
		}
		return fmt.Errorf("no Ready Event for %s among %d events", p.Name, len(events.Items))
	})
}

func minimalVAP(name string) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule: admissionregistrationv1.Rule{
							APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"},
						},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{Expression: "true"}},
		},
	}
}

func TestMissingAdmissionReferenceIsReportedUntilItExists(t *testing.T) {
	ctx := t.Context()
	p := newPlugin("refs-plugin", pluginv1alpha1.PluginSpec{
		LauncherHooks:               []pluginv1alpha1.LauncherHook{sidecarHook("refs-plugin")},
		ValidatingAdmissionPolicies: []pluginv1alpha1.AdmissionReference{{Name: "refs-plugin-vap"}},
		ValidatingAdmissionWebhooks: []pluginv1alpha1.AdmissionReference{{Name: "plugin-controller"}},
	})
	if err := admin.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	deleteAfter(t, p)

	notResolved := func(p *pluginv1alpha1.Plugin) error {
		if err := conditionIs(p, pluginv1alpha1.ConditionAdmissionReferencesResolved, metav1.ConditionFalse); err != nil {
			return err
		}
		return conditionIs(p, pluginv1alpha1.ConditionReady, metav1.ConditionFalse)
	}
	got := waitForStatus(t, p.Name, notResolved)
	msg := meta.FindStatusCondition(got.Status.Conditions, pluginv1alpha1.ConditionAdmissionReferencesResolved).Message
	if !strings.Contains(msg, "ValidatingAdmissionPolicy refs-plugin-vap") {
		t.Errorf("message %q does not name the missing policy", msg)
	}
	// The webhook configuration exists (envtest installed it).
	if strings.Contains(msg, "plugin-controller") {
		t.Errorf("message %q names an existing ValidatingWebhookConfiguration", msg)
	}

	vap := minimalVAP("refs-plugin-vap")
	if err := admin.Create(ctx, vap); err != nil {
		t.Fatal(err)
	}
	deleteAfter(t, vap)
	waitForStatus(t, p.Name, func(p *pluginv1alpha1.Plugin) error {
		if err := conditionIs(p, pluginv1alpha1.ConditionAdmissionReferencesResolved, metav1.ConditionTrue); err != nil {
			return err
		}
		return conditionIs(p, pluginv1alpha1.ConditionReady, metav1.ConditionTrue)
	})

	// Deleting it again is noticed as well.
	if err := admin.Delete(ctx, vap); err != nil {
		t.Fatal(err)
	}
	waitForStatus(t, p.Name, notResolved)
}

func minimalMAP(name string) *admissionregistrationv1.MutatingAdmissionPolicy {
	return &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule: admissionregistrationv1.Rule{
							APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"},
						},
					},
				}},
			},
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			Mutations: []admissionregistrationv1.Mutation{{
				PatchType: admissionregistrationv1.PatchTypeJSONPatch,
				JSONPatch: &admissionregistrationv1.JSONPatch{Expression: `[JSONPatch{op: "test", path: "/metadata/name", value: object.metadata.name}]`},
			}},
		},
	}
}

// The shared manager starts with MutatingAdmissionPolicy hidden from its
// discovery (mapGate). On an API server that does not serve the kind
// (--emulated-version=1.33), the server's own discovery says so and the
// gate changes nothing; on one that serves it, opening the gate is the
// upgrade, which the controller must pick up without a restart.
func TestReferenceToAnUnservedAdmissionKindIsReportedAndPickedUpOnceServed(t *testing.T) {
	ctx := t.Context()
	p := newPlugin("unserved-kind-plugin", pluginv1alpha1.PluginSpec{
		LauncherHooks:               []pluginv1alpha1.LauncherHook{sidecarHook("unserved-kind-plugin")},
		MutatingAdmissionPolicies:   []pluginv1alpha1.AdmissionReference{{Name: "unserved-kind-map"}},
		ValidatingAdmissionWebhooks: []pluginv1alpha1.AdmissionReference{{Name: "plugin-controller"}},
	})
	if err := admin.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	deleteAfter(t, p)

	notServed := func(p *pluginv1alpha1.Plugin) error {
		if err := conditionIs(p, pluginv1alpha1.ConditionAdmissionReferencesResolved, metav1.ConditionFalse); err != nil {
			return err
		}
		c := meta.FindStatusCondition(p.Status.Conditions, pluginv1alpha1.ConditionAdmissionReferencesResolved)
		want := "the API server does not serve admissionregistration.k8s.io/v1 MutatingAdmissionPolicy (referenced: unserved-kind-map)"
		if c.Reason != "KindNotServed" || c.Message != want {
			return fmt.Errorf("condition %s: %s, want KindNotServed: %s", c.Reason, c.Message, want)
		}
		return conditionIs(p, pluginv1alpha1.ConditionReady, metav1.ConditionFalse)
	}
	waitForStatus(t, p.Name, notServed)

	served := servesKind(t, "MutatingAdmissionPolicy")
	t.Logf("API server (emulated version %q) serves MutatingAdmissionPolicy: %v", server.EmulatedVersion, served)
	asked := mapGate.timesAsked()
	mapGate.open()
	// The next run (go test -count) starts before the upgrade again.
	t.Cleanup(mapGate.close)
	if !served {
		// The server's own answer still holds after a re-discovery through
		// the open gate, and the server refuses the kind itself. The second
		// discovery begun since the gate opened is one that passed it open
		// (rediscovery acts on one answer before it asks again); a
		// reconcile of a new generation after it judges the reference on
		// what it found.
		poll.Until(t, "the controller discovers again", 30*time.Second, func() error {
			if n := mapGate.timesAsked() - asked; n < 2 {
				return fmt.Errorf("%d discoveries since the gate opened", n)
			}
			return nil
		})
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := admin.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
				return err
			}
			if p.Spec.FailureStrategy == pluginv1alpha1.Ignore {
				p.Spec.FailureStrategy = pluginv1alpha1.Fail
			} else {
				p.Spec.FailureStrategy = pluginv1alpha1.Ignore
			}
			return admin.Update(ctx, p)
		}); err != nil {
			t.Fatal(err)
		}
		waitForStatus(t, p.Name, func(got *pluginv1alpha1.Plugin) error {
			if got.Status.ObservedGeneration != p.Generation {
				return fmt.Errorf("status of generation %d, want %d", got.Status.ObservedGeneration, p.Generation)
			}
			return notServed(got)
		})
		if err := admin.Create(ctx, minimalMAP("unserved-kind-map")); !meta.IsNoMatchError(err) {
			t.Fatalf("creating a MutatingAdmissionPolicy on a server not serving it: %v, want a no-match error", err)
		}
		return
	}
	// Served now: the reference is judged on the object, which is missing...
	waitForStatus(t, p.Name, func(p *pluginv1alpha1.Plugin) error {
		c := meta.FindStatusCondition(p.Status.Conditions, pluginv1alpha1.ConditionAdmissionReferencesResolved)
		if c == nil || c.Reason != "ReferencesMissing" || !strings.Contains(c.Message, "MutatingAdmissionPolicy unserved-kind-map") {
			return fmt.Errorf("condition %+v, want ReferencesMissing naming MutatingAdmissionPolicy unserved-kind-map", c)
		}
		return nil
	})
	// ...and the new watch notices when it is created.
	m := minimalMAP("unserved-kind-map")
	if err := admin.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	deleteAfter(t, m)
	waitForStatus(t, p.Name, func(p *pluginv1alpha1.Plugin) error {
		return conditionIs(p, pluginv1alpha1.ConditionReady, metav1.ConditionTrue)
	})
}
