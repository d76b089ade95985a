// SPDX-License-Identifier: Apache-2.0

package plugin

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

var (
	t0 = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 = metav1.NewTime(t0.Add(time.Minute))
)

func celError(path, detail string) *field.Error {
	return field.Invalid(field.NewPath("spec").Child(path), field.OmitValueType{}, detail)
}

func TestConditionsFollowWhatWasObserved(t *testing.T) {
	type want struct{ accepted, resolved, ready metav1.ConditionStatus }
	cases := []struct {
		name        string
		obs         observation
		want        want
		readyReason string
		msgContains map[string]string
	}{
		{
			name: "valid and resolved", want: want{"True", "True", "True"}, readyReason: ReasonReady,
		},
		{
			name:        "invalid CEL",
			obs:         observation{celErrors: field.ErrorList{celError("condition", "ERROR: undeclared reference to 'x'"), celError("nodeHooks[0].condition", "estimated cost 5000000 exceeds the limit 1000000")}},
			want:        want{"False", "True", "False"},
			readyReason: ReasonNotAccepted,
			msgContains: map[string]string{
				pluginv1alpha1.ConditionAccepted: "spec.condition: ERROR: undeclared reference to 'x'; spec.nodeHooks[0].condition: estimated cost 5000000 exceeds the limit 1000000",
				pluginv1alpha1.ConditionReady:    "2 invalid CEL expression(s)",
			},
		},
		{
			name:        "missing references",
			obs:         observation{missing: []reference{{"ValidatingAdmissionPolicy", "vap-a"}, {"MutatingWebhookConfiguration", "mwc-b"}}},
			want:        want{"True", "False", "False"},
			readyReason: ReasonReferencesMissing,
			msgContains: map[string]string{
				pluginv1alpha1.ConditionAdmissionReferencesResolved: "ValidatingAdmissionPolicy vap-a, MutatingWebhookConfiguration mwc-b",
			},
		},
		{
			name: "reference to a kind the server does not serve",
			obs: observation{
				unserved: []reference{{"MutatingAdmissionPolicy", "map-a"}, {"MutatingAdmissionPolicy", "map-b"}},
				missing:  []reference{{"ValidatingAdmissionPolicy", "vap-a"}},
			},
			want:        want{"True", "False", "False"},
			readyReason: ReasonKindNotServed,
			msgContains: map[string]string{
				pluginv1alpha1.ConditionAdmissionReferencesResolved: "the API server does not serve admissionregistration.k8s.io/v1 MutatingAdmissionPolicy (referenced: map-a, map-b); referenced admission objects not found: ValidatingAdmissionPolicy vap-a",
				pluginv1alpha1.ConditionReady:                       "does not serve admissionregistration.k8s.io/v1 MutatingAdmissionPolicy",
			},
		},
		{
			name:        "both wrong: Ready names the CEL problem first",
			obs:         observation{celErrors: field.ErrorList{celError("condition", "bad")}, missing: []reference{{"ValidatingAdmissionPolicy", "vap-a"}}},
			want:        want{"False", "False", "False"},
			readyReason: ReasonNotAccepted,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &pluginv1alpha1.Plugin{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 7}}
			st := desiredStatus(p, tc.obs, t0)
			got := want{
				meta.FindStatusCondition(st.Conditions, pluginv1alpha1.ConditionAccepted).Status,
				meta.FindStatusCondition(st.Conditions, pluginv1alpha1.ConditionAdmissionReferencesResolved).Status,
				meta.FindStatusCondition(st.Conditions, pluginv1alpha1.ConditionReady).Status,
			}
			if got != tc.want {
				t.Fatalf("conditions %+v, want %+v", got, tc.want)
			}
			if r := meta.FindStatusCondition(st.Conditions, pluginv1alpha1.ConditionReady).Reason; r != tc.readyReason {
				t.Errorf("Ready reason %q, want %q", r, tc.readyReason)
			}
			for typ, sub := range tc.msgContains {
				if m := meta.FindStatusCondition(st.Conditions, typ).Message; !strings.Contains(m, sub) {
					t.Errorf("%s message %q does not contain %q", typ, m, sub)
				}
			}
			for _, c := range st.Conditions {
				if c.ObservedGeneration != 7 {
					t.Errorf("%s observedGeneration %d, want 7", c.Type, c.ObservedGeneration)
				}
			}
		})
	}
}

func TestStatusCarriesObservedGenerationAndHookCounts(t *testing.T) {
	p := &pluginv1alpha1.Plugin{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 3},
		Spec: pluginv1alpha1.PluginSpec{
			LauncherHooks: make([]pluginv1alpha1.LauncherHook, 2),
			NodeHooks:     make([]pluginv1alpha1.NodeHook, 5),
		},
	}
	st := desiredStatus(p, observation{}, t0)
	if st.ObservedGeneration != 3 || st.LauncherHooks != 2 || st.NodeHooks != 5 {
		t.Fatalf("status %+v: want observedGeneration 3, launcherHooks 2, nodeHooks 5", st)
	}
}

func TestDesiredStatusIsStableSoNoWriteIsNeeded(t *testing.T) {
	p := &pluginv1alpha1.Plugin{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 1}}
	p.Status = desiredStatus(p, observation{}, t0)
	again := desiredStatus(p, observation{}, t1)
	if !slices.EqualFunc(p.Status.Conditions, again.Conditions, func(a, b metav1.Condition) bool { return a == b }) {
		t.Fatalf("unchanged observation changed the conditions:\n%+v\n%+v", p.Status.Conditions, again.Conditions)
	}
}

func TestLastTransitionTimeMovesOnlyWhenStatusChanges(t *testing.T) {
	p := &pluginv1alpha1.Plugin{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 1}}
	p.Status = desiredStatus(p, observation{}, t0)
	p.Generation = 2
	st := desiredStatus(p, observation{missing: []reference{{"ValidatingAdmissionPolicy", "v"}}}, t1)
	for _, c := range st.Conditions {
		want := t0
		if c.Type != pluginv1alpha1.ConditionAccepted {
			want = t1
		}
		if !c.LastTransitionTime.Equal(&want) {
			t.Errorf("%s lastTransitionTime %v, want %v", c.Type, c.LastTransitionTime, want)
		}
	}
}

func TestTransitionsListNewAndChangedConditionsOnly(t *testing.T) {
	p := &pluginv1alpha1.Plugin{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 1}}
	first := desiredStatus(p, observation{}, t0)
	if tr := transitions(nil, first.Conditions); len(tr) != 1 || tr[0].condition.Type != pluginv1alpha1.ConditionReady {
		t.Fatalf("first healthy status: transitions %+v, want Ready alone", tr)
	}
	broken := desiredStatus(p, observation{celErrors: field.ErrorList{celError("condition", "bad")}}, t0)
	if tr := transitions(nil, broken.Conditions); len(tr) != 2 {
		t.Fatalf("first broken status: transitions %+v, want Accepted and Ready", tr)
	}
	p.Status = first
	second := desiredStatus(p, observation{missing: []reference{{"ValidatingAdmissionPolicy", "v"}}}, t1)
	var got []string
	for _, x := range transitions(first.Conditions, second.Conditions) {
		got = append(got, x.condition.Type+":"+string(x.from)+"->"+string(x.condition.Status))
	}
	want := []string{"AdmissionReferencesResolved:True->False", "Ready:True->False"}
	if !slices.Equal(got, want) {
		t.Fatalf("transitions %v, want %v", got, want)
	}
	if tr := transitions(second.Conditions, second.Conditions); len(tr) != 0 {
		t.Fatalf("no change gave transitions %v", tr)
	}
}

func TestLongMessagesAreTruncatedToTheAPILimit(t *testing.T) {
	var errs field.ErrorList
	for range 100 {
		errs = append(errs, celError("condition", strings.Repeat("é", 500)))
	}
	p := &pluginv1alpha1.Plugin{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	st := desiredStatus(p, observation{celErrors: errs}, t0)
	m := meta.FindStatusCondition(st.Conditions, pluginv1alpha1.ConditionAccepted).Message
	if len(m) > maxMessageLength || !strings.HasSuffix(m, "...") {
		t.Fatalf("message of %d bytes, want at most %d ending in ...", len(m), maxMessageLength)
	}
}

func TestReferencesIndexNamesEveryKindOnce(t *testing.T) {
	p := &pluginv1alpha1.Plugin{Spec: pluginv1alpha1.PluginSpec{
		MutatingAdmissionPolicies:   []pluginv1alpha1.AdmissionReference{{Name: "a"}},
		ValidatingAdmissionPolicies: []pluginv1alpha1.AdmissionReference{{Name: "a"}, {Name: "b"}},
		MutatingAdmissionWebhooks:   []pluginv1alpha1.AdmissionReference{{Name: "c"}},
		ValidatingAdmissionWebhooks: []pluginv1alpha1.AdmissionReference{{Name: "d"}},
	}}
	got := indexReferences(p)
	want := []string{
		"MutatingAdmissionPolicy/a", "ValidatingAdmissionPolicy/a", "ValidatingAdmissionPolicy/b",
		"MutatingWebhookConfiguration/c", "ValidatingWebhookConfiguration/d",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("index keys %v, want %v", got, want)
	}
}
