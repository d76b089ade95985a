// SPDX-License-Identifier: Apache-2.0

package labelsync

import (
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

// apply applies patch to a JSON document holding meta under "metadata",
// as the API server does, and returns the resulting metadata.
func apply(t *testing.T, uid string, meta Metadata, patch []byte) (Metadata, error) {
	t.Helper()
	doc := map[string]any{"metadata": map[string]any{"uid": uid}}
	md := doc["metadata"].(map[string]any)
	if meta.Labels != nil {
		md["labels"] = meta.Labels
	}
	if meta.Annotations != nil {
		md["annotations"] = meta.Annotations
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		t.Fatalf("decoding %s: %v", patch, err)
	}
	out, err := p.Apply(raw)
	if err != nil {
		return Metadata{}, err
	}
	var res struct {
		Metadata struct {
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	return Metadata{Labels: res.Metadata.Labels, Annotations: res.Metadata.Annotations}, nil
}

func TestPatchWritesThePlannedMaps(t *testing.T) {
	rules := Rules{Labels: mustFilter(t, "ops.example.com/*"), Annotations: mustFilter(t, "notes.example.com/*")}
	cases := []struct {
		name   string
		source Metadata
		target Metadata
	}{
		{"labels absent on the target", Metadata{Labels: m{"ops.example.com/a": "1"}}, Metadata{}},
		{"labels present on the target", Metadata{Labels: m{"ops.example.com/a": "2"}}, Metadata{Labels: m{"ops.example.com/a": "1", "app": "x"}}},
		{"last label removed", Metadata{}, Metadata{Labels: m{"ops.example.com/a": "1"}}},
		{"labels and annotations together", Metadata{Labels: m{"ops.example.com/a": "1"}, Annotations: m{"notes.example.com/n": "v"}}, Metadata{Annotations: m{"keep": "k"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Plan(rules, tc.source, tc.target)
			patch, err := c.JSONPatch("uid-1")
			if err != nil {
				t.Fatal(err)
			}
			got, err := apply(t, "uid-1", tc.target, patch)
			if err != nil {
				t.Fatalf("applying %s: %v", patch, err)
			}
			if !maps.Equal(got.Labels, c.After.Labels) || !maps.Equal(got.Annotations, c.After.Annotations) {
				t.Fatalf("patched metadata = %+v, want %+v (patch %s)", got, c.After, patch)
			}
		})
	}
}

func TestPatchIsOneDocumentWithBothMaps(t *testing.T) {
	rules := Rules{Labels: mustFilter(t, "ops.example.com/*"), Annotations: mustFilter(t, "notes.example.com/*")}
	c := Plan(rules, Metadata{Labels: m{"ops.example.com/a": "1"}, Annotations: m{"notes.example.com/n": "v"}}, Metadata{})
	patch, err := c.JSONPatch("uid-1")
	if err != nil {
		t.Fatal(err)
	}
	var ops []map[string]any
	if err := json.Unmarshal(patch, &ops); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, op := range ops {
		paths = append(paths, op["op"].(string)+" "+op["path"].(string))
	}
	want := "test /metadata/uid|test /metadata/labels|add /metadata/labels|test /metadata/annotations|add /metadata/annotations"
	if strings.Join(paths, "|") != want {
		t.Fatalf("ops = %q, want %q", paths, want)
	}
}

func TestPatchFailsWhenTheTargetChangedMeanwhile(t *testing.T) {
	rules := Rules{Labels: mustFilter(t, "ops.example.com/*")}
	target := Metadata{Labels: m{"app": "x"}}
	c := Plan(rules, Metadata{Labels: m{"ops.example.com/a": "1"}}, target)
	patch, err := c.JSONPatch("uid-1")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		uid  string
		meta Metadata
	}{
		{"another writer added a label", "uid-1", Metadata{Labels: m{"app": "x", "writer": "1"}}},
		{"another writer removed the labels", "uid-1", Metadata{}},
		{"the object was recreated", "uid-2", target},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := apply(t, tc.uid, tc.meta, patch)
			if !errors.Is(err, jsonpatch.ErrTestFailed) {
				t.Fatalf("apply error = %v, want a failed test", err)
			}
		})
	}
}

func TestNoPatchWhenNothingChanges(t *testing.T) {
	rules := Rules{Labels: mustFilter(t, "ops.example.com/*")}
	c := Plan(rules, Metadata{Labels: m{"ops.example.com/a": "1"}}, Metadata{Labels: m{"ops.example.com/a": "1"}})
	patch, err := c.JSONPatch("uid-1")
	if err != nil || patch != nil {
		t.Fatalf("JSONPatch() = %s, %v; want nil", patch, err)
	}
}
