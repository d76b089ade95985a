// SPDX-License-Identifier: Apache-2.0

package monitoring

import (
	"encoding/json"
	"fmt"
	"os"
)

// DashboardPath is the Grafana dashboard, relative to the repository root.
const DashboardPath = "deploy/monitoring/dashboard.json"

// Panel is one panel of the dashboard that shows data, with the PromQL of
// each of its queries.
type Panel struct {
	Title string
	Exprs []string
}

type grafanaPanel struct {
	Type    string         `json:"type"`
	Title   string         `json:"title"`
	Panels  []grafanaPanel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// DashboardPanels reads the dashboard at path and returns its panels,
// those nested in rows included; rows themselves are not panels.
func DashboardPanels(path string) ([]Panel, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d struct {
		Panels []grafanaPanel `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []Panel
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			panel := Panel{Title: p.Title}
			for _, t := range p.Targets {
				panel.Exprs = append(panel.Exprs, t.Expr)
			}
			out = append(out, panel)
		}
	}
	walk(d.Panels)
	return out, nil
}

// DashboardRuleFile holds each query of panels as a recording rule, so
// that promtool check rules parses them all; the rule names say which
// panel a query comes from.
func DashboardRuleFile(panels []Panel) RuleFile {
	g := RuleGroup{Name: "dashboard"}
	for i, p := range panels {
		for j, e := range p.Exprs {
			g.Rules = append(g.Rules, Rule{
				Record: fmt.Sprintf("dashboard:panel_%02d_query_%d", i+1, j+1),
				Expr:   e,
				Labels: map[string]string{"panel": p.Title},
			})
		}
	}
	return RuleFile{Name: "dashboard", Groups: []RuleGroup{g}}
}
