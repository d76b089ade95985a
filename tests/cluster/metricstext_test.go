// SPDX-License-Identifier: Apache-2.0

package cluster

import "testing"

func TestSeriesValueMatchesWholeLabelsOnly(t *testing.T) {
	const text = `# TYPE kubevirt_plugins_launcher_hook_outcomes_total counter
kubevirt_plugins_launcher_hook_outcomes_total{hook_point="GuestDefinition",outcome="success",plugin="cel-tuning-2"} 7
kubevirt_plugins_launcher_hook_outcomes_total{hook_point="GuestDefinition",outcome="success",xplugin="cel-tuning"} 5
kubevirt_plugins_launcher_hook_outcomes_total{hook_point="GuestDefinition",outcome="success",plugin="cel-tuning"} 3
kubevirt_plugins_launcher_hook_outcomes_total_extra{plugin="cel-tuning"} 9
`
	for _, c := range []struct {
		labels map[string]string
		want   float64
	}{
		{map[string]string{"plugin": "cel-tuning", "outcome": "success"}, 3},
		{map[string]string{"plugin": "cel-tuning-2"}, 7},
		{map[string]string{"plugin": "cel-tuning", "outcome": "error"}, 0},
		{map[string]string{"plugin": "cel"}, 0},
	} {
		if got := seriesValue(text, "kubevirt_plugins_launcher_hook_outcomes_total", c.labels); got != c.want {
			t.Errorf("%v: got %g, want %g", c.labels, got, c.want)
		}
	}
}
