// SPDX-License-Identifier: Apache-2.0

// Package metrics checks the metric names of the modules against the
// project's namespace in api: label-syncer links no other module and
// repeats the namespace, so only a module that links them all can compare.
package metrics

import (
	"strings"
	"testing"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/handler-runtime/dispatch"
	"github.com/kubevirt-plugins/framework/label-syncer/syncmetrics"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
)

func TestEveryMetricIsInTheProjectNamespace(t *testing.T) {
	for component, names := range map[string][]string{
		"launcher_hook": {pipeline.MetricHookDuration, pipeline.MetricHookOutcomes, pipeline.MetricHookOverlaps},
		"node_hook": {dispatch.MetricCallDuration, dispatch.MetricIgnoredFailures, dispatch.MetricDispatchDuration,
			dispatch.MetricDispatchesInFlight, dispatch.MetricVMIWait},
		"label_syncer": {syncmetrics.MetricPatches, syncmetrics.MetricPatchConflicts, syncmetrics.MetricSyncDuration,
			syncmetrics.MetricSyncs, syncmetrics.MetricRefusedKeys},
	} {
		prefix := pluginv1alpha1.MetricsNamespace + "_" + component + "_"
		for _, name := range names {
			if !strings.HasPrefix(name, prefix) {
				t.Errorf("%s does not begin with %s", name, prefix)
			}
		}
	}
}
