// SPDX-License-Identifier: Apache-2.0

package labelsync

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
)

// JSONPatch returns the RFC 6902 patch that writes c to the object with the
// given UID, or nil when c is empty. It holds, in order: a test of the UID
// (when not empty), then for each map that changes a test of its previous
// value (null when the field was absent) and one add, replace or remove of
// the whole map. Labels and annotations go in the same patch.
func (c Change) JSONPatch(uid types.UID) ([]byte, error) {
	if c.Empty() {
		return nil, nil
	}
	var ops []map[string]any
	if uid != "" {
		ops = append(ops, map[string]any{"op": "test", "path": "/metadata/uid", "value": uid})
	}
	if c.LabelsChanged() {
		ops = append(ops, mapOps("/metadata/labels", c.Before.Labels, c.After.Labels)...)
	}
	if c.AnnotationsChanged() {
		ops = append(ops, mapOps("/metadata/annotations", c.Before.Annotations, c.After.Annotations)...)
	}
	data, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("encoding JSON patch: %w", err)
	}
	return data, nil
}

func mapOps(path string, before, after map[string]string) []map[string]any {
	test := map[string]any{"op": "test", "path": path, "value": nilIfAbsent(before)}
	switch {
	case len(after) == 0 && before != nil:
		return []map[string]any{test, {"op": "remove", "path": path}}
	case before == nil:
		return []map[string]any{test, {"op": "add", "path": path, "value": after}}
	default:
		return []map[string]any{test, {"op": "replace", "path": path, "value": after}}
	}
}

// nilIfAbsent keeps a nil map nil (JSON null) and an empty one empty ({}),
// so the test matches what the server stored.
func nilIfAbsent(m map[string]string) any {
	if m == nil {
		return nil
	}
	return m
}
