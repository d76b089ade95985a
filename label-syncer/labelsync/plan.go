// SPDX-License-Identifier: Apache-2.0

package labelsync

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubevirt-plugins/framework/label-syncer/keyfilter"
)

// Bookkeeping annotations written on targets when pruning is on. They are in
// keyfilter.OwnDomain, which no filter entry may cover, so they are never
// synced themselves.
const (
	SyncedLabelsAnnotation      = keyfilter.OwnDomain + "/synced-labels"
	SyncedAnnotationsAnnotation = keyfilter.OwnDomain + "/synced-annotations"
)

// Metadata is the part of an object the syncer reads and writes. A nil map
// means the field is absent; an empty non-nil map means it is present and
// empty (the JSON patch tests for the one it saw).
type Metadata struct {
	Labels      map[string]string
	Annotations map[string]string
}

// Rules says which keys are synced.
type Rules struct {
	// Labels selects the synced labels. Nil matches none.
	Labels *keyfilter.Filter
	// Annotations selects the synced annotations. Nil matches none.
	Annotations *keyfilter.Filter
	// Prune records the synced keys on each target and removes recorded
	// keys no entry matches any more. Default false: the bookkeeping
	// annotations are neither written nor read.
	Prune bool
}

// KeyChanges lists the synced keys a change adds, updates and removes, each
// sorted. The bookkeeping annotations are not listed.
type KeyChanges struct {
	Added   []string
	Updated []string
	Removed []string
}

// Empty reports whether no key changes.
func (k KeyChanges) Empty() bool {
	return len(k.Added)+len(k.Updated)+len(k.Removed) == 0
}

// String describes the changes for events and logs, for example
// "added a, b; removed c"; "" when there are none.
func (k KeyChanges) String() string {
	var parts []string
	for _, p := range []struct {
		verb string
		keys []string
	}{{"added", k.Added}, {"updated", k.Updated}, {"removed", k.Removed}} {
		if len(p.keys) > 0 {
			parts = append(parts, p.verb+" "+strings.Join(p.keys, ", "))
		}
	}
	return strings.Join(parts, "; ")
}

// Change is what a sync does to one target.
type Change struct {
	// Labels and Annotations list the synced keys that change.
	Labels, Annotations KeyChanges
	// Before is the target's metadata the change was planned from; After
	// is what it becomes.
	Before, After Metadata
	// Refused lists the source keys an entry selects that the target
	// cannot take, sorted by kind and key. They are left on the target as
	// they are (absent, or with the value synced before); the other keys
	// are synced.
	Refused []RefusedKey
}

// Kinds of a refused key.
const (
	KindLabel      = "label"
	KindAnnotation = "annotation"
)

// RefusedKey is a source key an entry selects that the target cannot take:
// a label key or value, or an annotation key, that the API server would
// reject (a template's metadata is not validated as an object's is). One
// such key would otherwise make every patch of its target fail.
type RefusedKey struct {
	// Kind is KindLabel or KindAnnotation.
	Kind string
	Key  string
	// Reason says what is wrong, as the API server's validation would.
	Reason string
}

// LabelsChanged reports whether the label map is rewritten.
func (c Change) LabelsChanged() bool { return !maps.Equal(c.Before.Labels, c.After.Labels) }

// AnnotationsChanged reports whether the annotation map is rewritten,
// bookkeeping included.
func (c Change) AnnotationsChanged() bool {
	return !maps.Equal(c.Before.Annotations, c.After.Annotations)
}

// Empty reports whether nothing is to be written.
func (c Change) Empty() bool { return !c.LabelsChanged() && !c.AnnotationsChanged() }

// Describe summarises the change of synced keys, for example
// "labels: added a; annotations: removed b"; "" when only bookkeeping changes.
func (c Change) Describe() string {
	var parts []string
	if s := c.Labels.String(); s != "" {
		parts = append(parts, "labels: "+s)
	}
	if s := c.Annotations.String(); s != "" {
		parts = append(parts, "annotations: "+s)
	}
	return strings.Join(parts, "; ")
}

// Plan computes the change that brings target in line with source under
// rules. It does not modify its arguments.
func Plan(rules Rules, source, target Metadata) Change {
	c := Change{Before: target}
	var recordedLabels, recordedAnnotations []string
	if rules.Prune {
		recordedLabels = parseRecord(target.Annotations[SyncedLabelsAnnotation])
		recordedAnnotations = parseRecord(target.Annotations[SyncedAnnotationsAnnotation])
	}
	var syncedLabels, syncedAnnotations []string
	var refusedLabels, refusedAnnotations []RefusedKey
	c.After.Labels, c.Labels, syncedLabels, refusedLabels = planMap(rules.Labels, source.Labels, target.Labels, recordedLabels, labelProblem)
	c.After.Annotations, c.Annotations, syncedAnnotations, refusedAnnotations = planMap(rules.Annotations, source.Annotations, target.Annotations, recordedAnnotations, annotationProblem)
	if rules.Prune {
		c.After.Annotations = setRecord(c.After.Annotations, SyncedLabelsAnnotation, syncedLabels)
		c.After.Annotations = setRecord(c.After.Annotations, SyncedAnnotationsAnnotation, syncedAnnotations)
	}
	refusedAnnotations = append(refusedAnnotations, c.fitAnnotations(target.Annotations)...)
	slices.SortFunc(refusedAnnotations, func(a, b RefusedKey) int { return strings.Compare(a.Key, b.Key) })
	c.Refused = append(refusedLabels, refusedAnnotations...)
	return c
}

// MaxAnnotationsBytes is the most the API server accepts of an object's
// annotations: the lengths of every key and value added up (Kubernetes'
// TotalAnnotationSizeLimitB).
const MaxAnnotationsBytes = 256 << 10

// AnnotationsBytes is the size of annotations as the API server counts it
// against MaxAnnotationsBytes.
func AnnotationsBytes(annotations map[string]string) int {
	n := 0
	for k, v := range annotations {
		n += len(k) + len(v)
	}
	return n
}

// fitAnnotations keeps the planned annotations within MaxAnnotationsBytes,
// which a template's metadata is not held to: while they are over, the
// largest annotation the plan adds or updates (the first key of equal
// sizes) is refused and left on the target as it was (before being the
// target's value, absent). Whatever is over without the plan's additions is
// the target's own and left alone, as the API server would take it. It
// returns the keys refused.
func (c *Change) fitAnnotations(before map[string]string) []RefusedKey {
	size := AnnotationsBytes(c.After.Annotations)
	if size <= MaxAnnotationsBytes {
		return nil
	}
	var refused []RefusedKey
	for size > MaxAnnotationsBytes {
		k, ok := c.largestWrittenAnnotation()
		if !ok {
			break
		}
		if refused == nil {
			// Planned from the target's own map when nothing changed,
			// which is then not to be written to.
			c.After.Annotations = maps.Clone(c.After.Annotations)
		}
		refused = append(refused, RefusedKey{Kind: KindAnnotation, Key: k, Reason: fmt.Sprintf(
			"%d bytes with its key: the target's annotations would total %d bytes, over the %d the API server accepts",
			len(k)+len(c.After.Annotations[k]), size, MaxAnnotationsBytes)})
		old, had := before[k]
		if had {
			c.After.Annotations[k] = old
			c.Annotations.Updated = slices.DeleteFunc(c.Annotations.Updated, func(u string) bool { return u == k })
		} else {
			delete(c.After.Annotations, k)
			c.Annotations.Added = slices.DeleteFunc(c.Annotations.Added, func(a string) bool { return a == k })
		}
		size = AnnotationsBytes(c.After.Annotations)
	}
	return refused
}

// largestWrittenAnnotation is the largest annotation (key and value) the
// plan adds or updates, the first key of equal sizes.
func (c *Change) largestWrittenAnnotation() (string, bool) {
	best, bestSize := "", -1
	for _, k := range slices.Concat(c.Annotations.Added, c.Annotations.Updated) {
		if n := len(k) + len(c.After.Annotations[k]); n > bestSize || (n == bestSize && k < best) {
			best, bestSize = k, n
		}
	}
	return best, bestSize >= 0
}

// planMap applies the rules to one map. recorded are keys synced earlier
// (nil when pruning is off); problem says why the target cannot take a key
// and value, "" when it can. It returns the new map (dst itself when
// unchanged), the changes, the matching keys of src, sorted, and the ones
// refused, sorted.
func planMap(f *keyfilter.Filter, src, dst map[string]string, recorded []string,
	problem func(k, v string) (kind, reason string)) (map[string]string, KeyChanges, []string, []RefusedKey) {
	var kc KeyChanges
	var synced []string
	var refused []RefusedKey
	for k, v := range src {
		if !f.Match(k) {
			continue
		}
		synced = append(synced, k)
		if kind, reason := problem(k, v); reason != "" {
			refused = append(refused, RefusedKey{Kind: kind, Key: k, Reason: reason})
			continue
		}
		old, ok := dst[k]
		switch {
		case !ok:
			kc.Added = append(kc.Added, k)
		case old != v:
			kc.Updated = append(kc.Updated, k)
		}
	}
	for k := range dst {
		_, inSource := src[k]
		switch {
		case f.Match(k) && !inSource:
			kc.Removed = append(kc.Removed, k)
		case !f.Match(k) && slices.Contains(recorded, k):
			// Synced earlier under an entry since removed from the
			// configuration: the source no longer decides this key.
			kc.Removed = append(kc.Removed, k)
		}
	}
	slices.Sort(synced)
	slices.SortFunc(refused, func(a, b RefusedKey) int { return strings.Compare(a.Key, b.Key) })
	if kc.Empty() {
		return dst, kc, synced, refused
	}
	slices.Sort(kc.Added)
	slices.Sort(kc.Updated)
	slices.Sort(kc.Removed)
	out := maps.Clone(dst)
	if out == nil {
		out = map[string]string{}
	}
	for _, k := range slices.Concat(kc.Added, kc.Updated) {
		out[k] = src[k]
	}
	for _, k := range kc.Removed {
		delete(out, k)
	}
	return out, kc, synced, refused
}

// labelProblem says why a label cannot be written, as the API server
// validates labels: a qualified name and a value of at most 63 characters
// of a restricted set.
func labelProblem(k, v string) (string, string) {
	if errs := validation.IsQualifiedName(k); len(errs) > 0 {
		return KindLabel, "not a valid label key: " + strings.Join(errs, "; ")
	}
	if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
		return KindLabel, "not a valid label value: " + strings.Join(errs, "; ")
	}
	return KindLabel, ""
}

// annotationProblem says why an annotation cannot be written: its key must
// be a qualified name (the API server checks it in lower case); values are
// free.
func annotationProblem(k, _ string) (string, string) {
	if errs := validation.IsQualifiedName(strings.ToLower(k)); len(errs) > 0 {
		return KindAnnotation, "not a valid annotation key: " + strings.Join(errs, "; ")
	}
	return KindAnnotation, ""
}

// setRecord returns m with the bookkeeping annotation key listing keys, or
// without it when keys is empty; m itself when that is already so.
func setRecord(m map[string]string, key string, keys []string) map[string]string {
	want := strings.Join(keys, ",")
	got, ok := m[key]
	if (want == "" && !ok) || (ok && got == want) {
		return m
	}
	out := maps.Clone(m)
	if want == "" {
		delete(out, key)
		return out
	}
	if out == nil {
		out = map[string]string{}
	}
	out[key] = want
	return out
}

func parseRecord(v string) []string {
	var keys []string
	for k := range strings.SplitSeq(v, ",") {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}
