// SPDX-License-Identifier: Apache-2.0

package monitoring

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt-plugins/framework/tests/framework/kustomize"
)

// Component is one kustomize component of deploy/monitoring and the
// kustomization of deploy/ it is meant to be added to, both relative to
// the repository root.
type Component struct {
	Dir, With string
}

// Components are the monitoring components, in the order an overlay lists
// them.
var Components = []Component{
	{Dir: "deploy/monitoring", With: "deploy"},
	{Dir: "deploy/monitoring/label-syncer", With: "deploy/label-syncer"},
}

// RuleFile is the spec of one PrometheusRule, in the format Prometheus
// and promtool read; Name is the PrometheusRule's.
type RuleFile struct {
	Name   string      `json:"-"`
	Groups []RuleGroup `json:"groups"`
}

// RuleGroup is one group of rules.
type RuleGroup struct {
	Name     string `json:"name"`
	Interval string `json:"interval,omitempty"`
	Rules    []Rule `json:"rules"`
}

// Rule is a recording rule (Record set) or an alert (Alert set).
type Rule struct {
	Record      string            `json:"record,omitempty"`
	Alert       string            `json:"alert,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Build builds, in dir (an empty directory), an overlay of the
// kustomizations the components go with and, if withComponents, the
// components themselves, and returns its objects, as `kubectl apply -k`
// would send them.
func Build(root, dir string, withComponents bool) ([]*unstructured.Unstructured, error) {
	var resources, components []string
	for _, c := range Components {
		with, err := filepath.Rel(dir, filepath.Join(root, c.With))
		if err != nil {
			return nil, err
		}
		comp, err := filepath.Rel(dir, filepath.Join(root, c.Dir))
		if err != nil {
			return nil, err
		}
		resources = append(resources, with)
		components = append(components, comp)
	}
	k := map[string]any{
		"apiVersion": "kustomize.config.k8s.io/v1beta1",
		"kind":       "Kustomization",
		"resources":  resources,
	}
	if withComponents {
		k["components"] = components
	}
	b, err := yaml.Marshal(k)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), b, 0o644); err != nil {
		return nil, err
	}
	return kustomize.Build(dir)
}

// PrometheusRules builds the components into an overlay in dir and returns
// the spec of each PrometheusRule in it, sorted by name.
func PrometheusRules(root, dir string) ([]RuleFile, error) {
	objs, err := Build(root, dir, true)
	if err != nil {
		return nil, err
	}
	var files []RuleFile
	for _, o := range objs {
		if o.GetKind() != "PrometheusRule" {
			continue
		}
		spec, ok := o.Object["spec"].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("PrometheusRule %s has no spec", o.GetName())
		}
		var f RuleFile
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(spec, &f, true); err != nil {
			return nil, fmt.Errorf("PrometheusRule %s: %w", o.GetName(), err)
		}
		f.Name = o.GetName()
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("the components hold no PrometheusRule")
	}
	slices.SortFunc(files, func(a, b RuleFile) int { return strings.Compare(a.Name, b.Name) })
	return files, nil
}

// WriteRuleFiles writes each file into dir as <Name>.yaml, the name the
// promtool unit tests give in rule_files, and returns the paths.
func WriteRuleFiles(dir string, files []RuleFile) ([]string, error) {
	var paths []string
	for _, f := range files {
		b, err := yaml.Marshal(f)
		if err != nil {
			return nil, err
		}
		p := filepath.Join(dir, f.Name+".yaml")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// Alerts returns the alerting rules of files.
func Alerts(files []RuleFile) []Rule {
	var out []Rule
	for _, f := range files {
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				if r.Alert != "" {
					out = append(out, r)
				}
			}
		}
	}
	return out
}

// Records returns the names of the recording rules of files.
func Records(files []RuleFile) []string {
	var out []string
	for _, f := range files {
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				if r.Record != "" {
					out = append(out, r.Record)
				}
			}
		}
	}
	return out
}

// rangeSelector matches the range of a range vector selector or subquery,
// "[10m]" or "[1h:5m]".
var rangeSelector = regexp.MustCompile(`\[[0-9]+[smhdwy]+(:[0-9]*[smhdwy]*)?\]`)

// Shortened returns a copy of files whose expressions read every range over
// window instead and whose alerts wait forDuration before firing, for a
// Prometheus that has minutes, not hours, to show each alert firing and
// resolving. The expressions are otherwise the same; the recording rules
// keep their names, so the alerts read them as they do in files.
func Shortened(files []RuleFile, window, forDuration string) []RuleFile {
	out := make([]RuleFile, len(files))
	for i, f := range files {
		out[i] = RuleFile{Name: f.Name}
		for _, g := range f.Groups {
			sg := RuleGroup{Name: g.Name, Interval: g.Interval}
			for _, r := range g.Rules {
				r.Expr = rangeSelector.ReplaceAllString(r.Expr, "["+window+"]")
				if r.For != "" {
					r.For = forDuration
				}
				sg.Rules = append(sg.Rules, r)
			}
			out[i].Groups = append(out[i].Groups, sg)
		}
	}
	return out
}
