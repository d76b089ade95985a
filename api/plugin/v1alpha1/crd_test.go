// SPDX-License-Identifier: Apache-2.0

package v1alpha1_test

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

// crdFile is the CRD make generate writes from the markers of this package.
const crdFile = "../../../deploy/crd/plugin.kubevirt.io_plugins.yaml"

// schema is one node of the CRD's OpenAPI schema, as decoded from YAML.
type schema = map[string]any

// crdSchema returns the openAPIV3Schema of version v1alpha1.
func crdSchema(t *testing.T) schema {
	t.Helper()
	data, err := os.ReadFile(crdFile)
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Name   string `json:"name"`
				Schema struct {
					OpenAPIV3Schema schema `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == v1alpha1.GroupVersion.Version {
			return v.Schema.OpenAPIV3Schema
		}
	}
	t.Fatalf("%s has no version %s", crdFile, v1alpha1.GroupVersion.Version)
	return nil
}

// walkSchema calls visit for every node of the schema with its path: field
// names joined by ".", "[]" for the items of a list.
func walkSchema(node schema, path string, visit func(path string, node schema)) {
	visit(path, node)
	if props, ok := node["properties"].(schema); ok {
		for name, child := range props {
			p := name
			if path != "" {
				p = path + "." + name
			}
			if c, ok := child.(schema); ok {
				walkSchema(c, p, visit)
			}
		}
	}
	if items, ok := node["items"].(schema); ok {
		walkSchema(items, path+"[]", visit)
	}
}

func names[T ~string](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

func stringList(t *testing.T, path string, v any) []string {
	t.Helper()
	list, ok := v.([]any)
	if !ok {
		t.Fatalf("%s: enum is %T, not a list", path, v)
	}
	out := make([]string, len(list))
	for i, e := range list {
		out[i], _ = e.(string)
	}
	return out
}

// TestCRDEnumsAreTheGoConstants checks every enum of the generated CRD
// against the Go lists of the values (the +kubebuilder:validation:Enum
// markers repeat them by hand), and the bound on each permittedHooks list
// against the number of hook points.
func TestCRDEnumsAreTheGoConstants(t *testing.T) {
	launcherPoints := names(v1alpha1.LauncherHookPoints)
	nodePoints := names(v1alpha1.NodeHookPoints)
	strategies := names(v1alpha1.FailureStrategies)
	want := map[string][]string{
		"spec.failureStrategy":                          strategies,
		"spec.launcherHooks[].failureStrategy":          strategies,
		"spec.launcherHooks[].cel.hookPoint":            launcherPoints,
		"spec.launcherHooks[].sidecar.permittedHooks[]": launcherPoints,
		"spec.nodeHooks[].failureStrategy":              strategies,
		"spec.nodeHooks[].permittedHooks[]":             nodePoints,
		// metav1.Condition's own marker.
		"status.conditions[].status": names([]metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown}),
	}
	maxItems := map[string]int{
		"spec.launcherHooks[].sidecar.permittedHooks": len(launcherPoints),
		"spec.nodeHooks[].permittedHooks":             len(nodePoints),
	}
	seen := map[string]bool{}
	walkSchema(crdSchema(t), "", func(path string, node schema) {
		if n, ok := maxItems[path]; ok {
			seen[path] = true
			if got, _ := node["maxItems"].(float64); int(got) != n {
				t.Errorf("%s: maxItems %v, want %d (one per hook point)", path, node["maxItems"], n)
			}
		}
		enum, ok := node["enum"]
		if !ok {
			return
		}
		seen[path] = true
		w, known := want[path]
		if !known {
			t.Errorf("%s: enum %v that this test does not tie to Go constants", path, enum)
			return
		}
		got := stringList(t, path, enum)
		if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(w))) {
			t.Errorf("%s: the CRD's enum is %v, the Go constants are %v", path, got, w)
		}
	})
	for path := range want {
		if !seen[path] {
			t.Errorf("%s: no enum in the CRD", path)
		}
	}
	for path := range maxItems {
		if !seen[path] {
			t.Errorf("%s: not in the CRD", path)
		}
	}
}

var (
	splitSize  = regexp.MustCompile(`size\(h\.sidecar\.socketPath\.split\('/'\)\) > (\d+)`)
	splitIndex = regexp.MustCompile(`h\.sidecar\.socketPath\.split\('/'\)\[(\d+)\] == self\.metadata\.name`)
)

// TestCRDSocketPathRuleMatchesSocketsRoot checks the rule that keeps a
// sidecar socket inside its plugin's directory against the layout it
// relies on: SocketsRoot/<plugin name>/<file>. Split on "/", the
// components of SocketsRoot (the first one empty) come first, so the
// plugin name is at index len(strings.Split(SocketsRoot, "/")) and a file
// after it makes the list at least one longer.
func TestCRDSocketPathRuleMatchesSocketsRoot(t *testing.T) {
	nameIndex := len(strings.Split(v1alpha1.SocketsRoot, "/"))
	if got := strings.Split(v1alpha1.PluginDir("p")+"hook.sock", "/")[nameIndex]; got != "p" {
		t.Fatalf("component %d of a socket path is %q, not the plugin name", nameIndex, got)
	}
	root := crdSchema(t)
	rules, _ := root["x-kubernetes-validations"].([]any)
	found := false
	for _, r := range rules {
		rule, _ := r.(schema)["rule"].(string)
		if !strings.Contains(rule, "h.sidecar.socketPath.split(") {
			continue
		}
		found = true
		index := splitIndex.FindStringSubmatch(rule)
		size := splitSize.FindStringSubmatch(rule)
		if index == nil || size == nil {
			t.Fatalf("rule %q: no size(...) > N or split('/')[N] == self.metadata.name", rule)
		}
		if n, _ := strconv.Atoi(index[1]); n != nameIndex {
			t.Errorf("rule %q compares component %d with the plugin name; under %s it is component %d", rule, n, v1alpha1.SocketsRoot, nameIndex)
		}
		if n, _ := strconv.Atoi(size[1]); n != nameIndex+1 {
			t.Errorf("rule %q wants more than %d components; a file after the plugin name needs more than %d", rule, n, nameIndex+1)
		}
		if msg, _ := r.(schema)["message"].(string); !strings.Contains(msg, v1alpha1.SocketsRoot+"/") {
			t.Errorf("message %q does not name %s/", msg, v1alpha1.SocketsRoot)
		}
	}
	if !found {
		t.Fatal("no rule on the sidecar socketPath split into components")
	}

	walkSchema(root, "", func(path string, node schema) {
		switch path {
		case "spec.launcherHooks[].sidecar.socketPath", "spec.nodeHooks[].socket":
			if got, _ := node["maxLength"].(float64); int(got) != v1alpha1.MaxSocketPathLength {
				t.Errorf("%s: maxLength %v, want MaxSocketPathLength (%d)", path, node["maxLength"], v1alpha1.MaxSocketPathLength)
			}
		}
		if path != "spec.launcherHooks[].sidecar.socketPath" {
			return
		}
		prefix := "self.startsWith('" + v1alpha1.SocketsRoot + "/')"
		rules, _ := node["x-kubernetes-validations"].([]any)
		if !slices.ContainsFunc(rules, func(r any) bool { return r.(schema)["rule"] == prefix }) {
			t.Errorf("%s: no rule %s", path, prefix)
		}
	})
}

// TestCRDHookListsAreBoundedByMaxHooks ties MaxHooks, the bound validation
// counts hooks against before compiling anything, to the maxItems of the
// CRD's hook lists.
func TestCRDHookListsAreBoundedByMaxHooks(t *testing.T) {
	want := map[string]bool{"spec.launcherHooks": false, "spec.nodeHooks": false}
	walkSchema(crdSchema(t), "", func(path string, node schema) {
		if _, ok := want[path]; !ok {
			return
		}
		want[path] = true
		if got, _ := node["maxItems"].(float64); int(got) != v1alpha1.MaxHooks {
			t.Errorf("%s: maxItems %v, want MaxHooks (%d)", path, node["maxItems"], v1alpha1.MaxHooks)
		}
	})
	for path, seen := range want {
		if !seen {
			t.Errorf("%s: not in the CRD", path)
		}
	}
}
