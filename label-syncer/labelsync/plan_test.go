// SPDX-License-Identifier: Apache-2.0

package labelsync

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/kubevirt-plugins/framework/label-syncer/keyfilter"
)

func mustFilter(t *testing.T, list string) *keyfilter.Filter {
	t.Helper()
	f, err := keyfilter.Parse(list)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

type m = map[string]string

func TestPlanFollowsSyncRules(t *testing.T) {
	cases := []struct {
		name        string
		labels      string // filter list for labels
		annotations string // filter list for annotations
		source      Metadata
		target      Metadata
		want        Metadata
		wantLabels  KeyChanges
		wantAnnots  KeyChanges
	}{
		{
			name:       "matching key in the source is added to the target",
			labels:     "ops.example.com/*",
			source:     Metadata{Labels: m{"ops.example.com/dynamic-a": "enabled"}},
			target:     Metadata{Labels: m{"app": "web"}},
			want:       Metadata{Labels: m{"app": "web", "ops.example.com/dynamic-a": "enabled"}},
			wantLabels: KeyChanges{Added: []string{"ops.example.com/dynamic-a"}},
		},
		{
			name:       "matching key with another value is overwritten",
			labels:     "ops.example.com/*",
			source:     Metadata{Labels: m{"ops.example.com/owner-a": "team-a-v2"}},
			target:     Metadata{Labels: m{"ops.example.com/owner-a": "team-a"}},
			want:       Metadata{Labels: m{"ops.example.com/owner-a": "team-a-v2"}},
			wantLabels: KeyChanges{Updated: []string{"ops.example.com/owner-a"}},
		},
		{
			name:       "matching key only in the target is removed",
			labels:     "ops.example.com/*",
			source:     Metadata{Labels: m{"ops.example.com/owner-a": "team-a"}},
			target:     Metadata{Labels: m{"ops.example.com/owner-a": "team-a", "ops.example.com/dynamic-a": "enabled"}},
			want:       Metadata{Labels: m{"ops.example.com/owner-a": "team-a"}},
			wantLabels: KeyChanges{Removed: []string{"ops.example.com/dynamic-a"}},
		},
		{
			name:   "keys outside the patterns are never touched",
			labels: "ops.example.com/*",
			source: Metadata{Labels: m{"app": "new", "ops.example.com/vm-id": "vm-a"}},
			target: Metadata{Labels: m{"app": "old", "kubevirt.io/created-by": "uid-1", "team.example.com/x": "y", "ops.example.com/vm-id": "vm-a"}},
			want:   Metadata{Labels: m{"app": "old", "kubevirt.io/created-by": "uid-1", "team.example.com/x": "y", "ops.example.com/vm-id": "vm-a"}},
		},
		{
			name:       "exact key entries select only that key",
			labels:     "ops.example.com/owner,ops.example.com/vm-id",
			source:     Metadata{Labels: m{"ops.example.com/owner": "a", "ops.example.com/owner-b": "b", "ops.example.com/vm-id": "1"}},
			target:     Metadata{Labels: m{"ops.example.com/vm-id": "0", "ops.example.com/other": "z"}},
			want:       Metadata{Labels: m{"ops.example.com/owner": "a", "ops.example.com/vm-id": "1", "ops.example.com/other": "z"}},
			wantLabels: KeyChanges{Added: []string{"ops.example.com/owner"}, Updated: []string{"ops.example.com/vm-id"}},
		},
		{
			name:        "annotations follow the same rules with their own filter",
			labels:      "ops.example.com/*",
			annotations: "notes.example.com/*",
			source:      Metadata{Labels: m{"notes.example.com/a": "l"}, Annotations: m{"notes.example.com/a": "1", "ops.example.com/b": "2"}},
			target:      Metadata{Annotations: m{"notes.example.com/gone": "x", "keep": "k"}},
			want:        Metadata{Annotations: m{"notes.example.com/a": "1", "keep": "k"}},
			wantAnnots:  KeyChanges{Added: []string{"notes.example.com/a"}, Removed: []string{"notes.example.com/gone"}},
		},
		{
			name:   "no change when the target already agrees",
			labels: "ops.example.com/*",
			source: Metadata{Labels: m{"ops.example.com/a": "1"}},
			target: Metadata{Labels: m{"ops.example.com/a": "1", "x": "y"}},
			want:   Metadata{Labels: m{"ops.example.com/a": "1", "x": "y"}},
		},
		{
			name:   "empty configuration changes nothing",
			source: Metadata{Labels: m{"ops.example.com/a": "1"}},
			target: Metadata{Labels: m{"ops.example.com/b": "2"}},
			want:   Metadata{Labels: m{"ops.example.com/b": "2"}},
		},
		{
			name:       "removing the last label removes the map",
			labels:     "ops.example.com/*",
			source:     Metadata{},
			target:     Metadata{Labels: m{"ops.example.com/a": "1"}},
			want:       Metadata{Labels: m{}},
			wantLabels: KeyChanges{Removed: []string{"ops.example.com/a"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rules := Rules{Labels: mustFilter(t, tc.labels), Annotations: mustFilter(t, tc.annotations)}
			before := Metadata{Labels: maps.Clone(tc.target.Labels), Annotations: maps.Clone(tc.target.Annotations)}
			c := Plan(rules, tc.source, tc.target)
			if !maps.Equal(c.After.Labels, tc.want.Labels) || !maps.Equal(c.After.Annotations, tc.want.Annotations) {
				t.Fatalf("after = %+v, want %+v", c.After, tc.want)
			}
			if !sameChanges(c.Labels, tc.wantLabels) || !sameChanges(c.Annotations, tc.wantAnnots) {
				t.Fatalf("changes = %+v / %+v, want %+v / %+v", c.Labels, c.Annotations, tc.wantLabels, tc.wantAnnots)
			}
			wantEmpty := tc.wantLabels.Empty() && tc.wantAnnots.Empty()
			if c.Empty() != wantEmpty {
				t.Fatalf("Empty() = %v, want %v", c.Empty(), wantEmpty)
			}
			if !maps.Equal(tc.target.Labels, before.Labels) || !maps.Equal(tc.target.Annotations, before.Annotations) {
				t.Fatalf("Plan modified the target: %+v", tc.target)
			}
		})
	}
}

func sameChanges(a, b KeyChanges) bool {
	return slices.Equal(a.Added, b.Added) && slices.Equal(a.Updated, b.Updated) && slices.Equal(a.Removed, b.Removed)
}

func TestAnotherVMsKeysNeverAppear(t *testing.T) {
	rules := Rules{Labels: mustFilter(t, "ops.example.com/*")}
	vmA := Metadata{Labels: m{"ops.example.com/vm-id": "vm-a", "ops.example.com/owner-a": "team-a"}}
	vmiA := Metadata{Labels: m{"ops.example.com/vm-id": "vm-a"}}
	c := Plan(rules, vmA, vmiA)
	for k := range c.After.Labels {
		if k == "ops.example.com/owner-b" {
			t.Fatalf("B's key on A: %v", c.After.Labels)
		}
	}
	if c.After.Labels["ops.example.com/owner-a"] != "team-a" {
		t.Fatalf("A's key missing: %v", c.After.Labels)
	}
}

func TestPruneRecordsSyncedKeysOnTheTarget(t *testing.T) {
	rules := Rules{Labels: mustFilter(t, "ops.example.com/*"), Annotations: mustFilter(t, "notes.example.com/*"), Prune: true}
	c := Plan(rules,
		Metadata{Labels: m{"ops.example.com/b": "1", "ops.example.com/a": "1", "app": "x"}, Annotations: m{"notes.example.com/n": "v"}},
		Metadata{Labels: m{"app": "y"}})
	if got := c.After.Annotations[SyncedLabelsAnnotation]; got != "ops.example.com/a,ops.example.com/b" {
		t.Fatalf("label record = %q", got)
	}
	if got := c.After.Annotations[SyncedAnnotationsAnnotation]; got != "notes.example.com/n" {
		t.Fatalf("annotation record = %q", got)
	}
	if c.Annotations.String() != "added notes.example.com/n" {
		t.Fatalf("bookkeeping listed as a synced change: %q", c.Annotations)
	}
}

func TestPruneRemovesRecordedKeyNoLongerConfigured(t *testing.T) {
	// Synced under "ops.example.com/*", which the configuration dropped;
	// the source still has the key.
	rules := Rules{Labels: mustFilter(t, "team.example.com/*"), Prune: true}
	target := Metadata{
		Labels:      m{"ops.example.com/owner": "a", "ops.example.com/manual": "hand", "app": "x"},
		Annotations: m{SyncedLabelsAnnotation: "ops.example.com/owner"},
	}
	c := Plan(rules, Metadata{Labels: m{"ops.example.com/owner": "a"}}, target)
	want := m{"ops.example.com/manual": "hand", "app": "x"}
	if !maps.Equal(c.After.Labels, want) {
		t.Fatalf("labels = %v, want %v", c.After.Labels, want)
	}
	if _, ok := c.After.Annotations[SyncedLabelsAnnotation]; ok {
		t.Fatalf("record kept with nothing synced: %v", c.After.Annotations)
	}
	if !slices.Equal(c.Labels.Removed, []string{"ops.example.com/owner"}) {
		t.Fatalf("removed = %v", c.Labels.Removed)
	}
}

func TestPruneKeepsKeysItNeverSynced(t *testing.T) {
	rules := Rules{Labels: mustFilter(t, "team.example.com/*"), Prune: true}
	target := Metadata{Labels: m{"ops.example.com/manual": "hand"}, Annotations: m{SyncedLabelsAnnotation: "ops.example.com/owner"}}
	c := Plan(rules, Metadata{}, target)
	if c.After.Labels["ops.example.com/manual"] != "hand" {
		t.Fatalf("hand-added key removed: %v", c.After.Labels)
	}
}

func TestPruneOffIgnoresTheRecord(t *testing.T) {
	rules := Rules{Labels: mustFilter(t, "team.example.com/*")}
	target := Metadata{Labels: m{"ops.example.com/owner": "a"}, Annotations: m{SyncedLabelsAnnotation: "ops.example.com/owner"}}
	c := Plan(rules, Metadata{Labels: m{"team.example.com/x": "1"}}, target)
	if c.After.Labels["ops.example.com/owner"] != "a" {
		t.Fatalf("pruned with pruning off: %v", c.After.Labels)
	}
	if c.After.Annotations[SyncedLabelsAnnotation] != "ops.example.com/owner" {
		t.Fatalf("record rewritten with pruning off: %v", c.After.Annotations)
	}
}

func TestBookkeepingAnnotationIsNeverSynced(t *testing.T) {
	// The VMI (source) carries its own record; the Pod's record must list
	// the Pod's synced keys, not be copied from the VMI.
	rules := Rules{Labels: mustFilter(t, "ops.example.com/a"), Annotations: mustFilter(t, "notes.example.com/*"), Prune: true}
	vmi := Metadata{
		Labels:      m{"ops.example.com/a": "1"},
		Annotations: m{SyncedLabelsAnnotation: "ops.example.com/a,ops.example.com/b", SyncedAnnotationsAnnotation: "notes.example.com/z"},
	}
	c := Plan(rules, vmi, Metadata{})
	if got := c.After.Annotations[SyncedLabelsAnnotation]; got != "ops.example.com/a" {
		t.Fatalf("pod label record = %q", got)
	}
	if _, ok := c.After.Annotations[SyncedAnnotationsAnnotation]; ok {
		t.Fatalf("annotation record copied from the source: %v", c.After.Annotations)
	}
}

func TestDescribeNamesEachChangedKey(t *testing.T) {
	c := Change{
		Labels:      KeyChanges{Added: []string{"a", "b"}, Removed: []string{"c"}},
		Annotations: KeyChanges{Updated: []string{"d"}},
	}
	if got, want := c.Describe(), "labels: added a, b; removed c; annotations: updated d"; got != want {
		t.Fatalf("Describe() = %q, want %q", got, want)
	}
}

// TestKeysTheTargetCannotTakeAreRefusedAndTheOthersSynced: a template is
// not validated as an object's metadata is, so it can hold a label value or
// key the VMI's API server rejects. Such a key is refused (left on the
// target as it is, listed in Refused) and the other keys are synced, rather
// than every patch of the target failing.
func TestKeysTheTargetCannotTakeAreRefusedAndTheOthersSynced(t *testing.T) {
	rules := Rules{Labels: mustFilter(t, "ops.example.com/*"), Annotations: mustFilter(t, "notes.example.com/*")}
	source := Metadata{
		Labels: m{
			"ops.example.com/owner":     "team-b",
			"ops.example.com/bad-value": "not a label value!",
			"ops.example.com/Bad Key":   "x",
			"ops.example.com/kept":      strings.Repeat("v", 64),
		},
		Annotations: m{"notes.example.com/ticket": "any value: it is free", "notes.example.com/bad key": "x"},
	}
	target := Metadata{Labels: m{"ops.example.com/owner": "team-a", "ops.example.com/kept": "old"}}
	c := Plan(rules, source, target)
	wantLabels := m{"ops.example.com/owner": "team-b", "ops.example.com/kept": "old"}
	if !maps.Equal(c.After.Labels, wantLabels) {
		t.Fatalf("labels after = %v, want %v", c.After.Labels, wantLabels)
	}
	if !maps.Equal(c.After.Annotations, m{"notes.example.com/ticket": "any value: it is free"}) {
		t.Fatalf("annotations after = %v", c.After.Annotations)
	}
	var got []string
	for _, r := range c.Refused {
		got = append(got, r.Kind+" "+r.Key)
		if r.Reason == "" {
			t.Errorf("refused %s %s without a reason", r.Kind, r.Key)
		}
	}
	want := []string{"label ops.example.com/Bad Key", "label ops.example.com/bad-value", "label ops.example.com/kept", "annotation notes.example.com/bad key"}
	if !slices.Equal(got, want) {
		t.Fatalf("refused %q, want %q", got, want)
	}
	if c.Labels.Removed != nil {
		t.Fatalf("a refused key was removed: %+v", c.Labels)
	}

	// Nothing else to do: the change is empty, the refusal stays known.
	c = Plan(rules, source, c.After)
	if !c.Empty() || len(c.Refused) != 4 {
		t.Fatalf("second plan: empty %v, %d refused; want true, 4", c.Empty(), len(c.Refused))
	}
}

// TestAnnotationsOverTheAPIServersTotalAreRefused: the API server refuses an
// object whose annotations total over 256 KiB, which a template is not held
// to. An annotation that would take the target over is refused (absent, or
// with the value synced before) with a reason giving the sizes, the largest
// first, and the other keys are synced; a plan with nothing over refuses
// nothing.
func TestAnnotationsOverTheAPIServersTotalAreRefused(t *testing.T) {
	rules := Rules{Labels: mustFilter(t, "ops.example.com/*"), Annotations: mustFilter(t, "notes.example.com/*"), Prune: true}
	huge := strings.Repeat("h", 300<<10)
	source := Metadata{
		Labels:      m{"ops.example.com/owner": "team-b"},
		Annotations: m{"notes.example.com/huge": huge, "notes.example.com/ticket": "T-1"},
	}
	c := Plan(rules, source, Metadata{})
	if got := AnnotationsBytes(c.After.Annotations); got > MaxAnnotationsBytes {
		t.Fatalf("planned annotations total %d bytes, over %d", got, MaxAnnotationsBytes)
	}
	if _, ok := c.After.Annotations["notes.example.com/huge"]; ok {
		t.Fatal("the 300 KiB annotation is planned")
	}
	if c.After.Annotations["notes.example.com/ticket"] != "T-1" || c.After.Labels["ops.example.com/owner"] != "team-b" {
		t.Fatalf("the other keys are not synced: labels %v, annotations %v", c.After.Labels, keysOf(c.After.Annotations))
	}
	if len(c.Refused) != 1 || c.Refused[0].Kind != KindAnnotation || c.Refused[0].Key != "notes.example.com/huge" {
		t.Fatalf("refused %+v, want the huge annotation", c.Refused)
	}
	for _, w := range []string{fmt.Sprint(len("notes.example.com/huge") + len(huge)), fmt.Sprint(MaxAnnotationsBytes)} {
		if !strings.Contains(c.Refused[0].Reason, w) {
			t.Errorf("reason %q does not give %s", c.Refused[0].Reason, w)
		}
	}
	if slices.Contains(c.Annotations.Added, "notes.example.com/huge") {
		t.Fatalf("changes %+v list the refused key", c.Annotations)
	}

	// Synced before at a small size: the old value stays.
	target := Metadata{Annotations: m{"notes.example.com/huge": "small"}}
	c = Plan(rules, source, target)
	if c.After.Annotations["notes.example.com/huge"] != "small" || len(c.Refused) != 1 {
		t.Fatalf("after %v, refused %+v; want the value synced before kept", keysOf(c.After.Annotations), c.Refused)
	}
	if target.Annotations["notes.example.com/huge"] != "small" || len(target.Annotations) != 1 {
		t.Fatal("Plan changed the target it was given")
	}

	// Two that fit alone but not together: the larger is refused.
	source.Annotations = m{"notes.example.com/a": strings.Repeat("a", 150<<10), "notes.example.com/b": strings.Repeat("b", 140<<10)}
	c = Plan(rules, source, Metadata{})
	if len(c.Refused) != 1 || c.Refused[0].Key != "notes.example.com/a" || c.After.Annotations["notes.example.com/b"] == "" {
		t.Fatalf("refused %+v, after %v; want a refused and b synced", c.Refused, keysOf(c.After.Annotations))
	}

	// Exactly at the limit: nothing refused.
	source.Annotations = m{}
	source.Annotations["notes.example.com/a"] = strings.Repeat("a", MaxAnnotationsBytes-len("notes.example.com/a"))
	c = Plan(Rules{Annotations: rules.Annotations}, source, Metadata{})
	if len(c.Refused) != 0 || AnnotationsBytes(c.After.Annotations) != MaxAnnotationsBytes {
		t.Fatalf("at the limit: refused %+v, %d bytes", c.Refused, AnnotationsBytes(c.After.Annotations))
	}
}

func keysOf(mm map[string]string) []string { return slices.Sorted(maps.Keys(mm)) }
