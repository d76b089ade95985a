// SPDX-License-Identifier: Apache-2.0

// Package metrics checks the metric names of the modules in one place: each
// component registers exactly the metrics its Metric* constants name, each
// under the project's namespace (api's MetricsNamespace) and the
// component's prefix, and its package documentation lists each by name.
// label-syncer links no other module and repeats the namespace, so only a
// module that links them all can compare.
package metrics

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/handler-runtime/dispatch"
	"github.com/kubevirt-plugins/framework/handler-runtime/launchermetrics"
	"github.com/kubevirt-plugins/framework/handler-runtime/store"
	"github.com/kubevirt-plugins/framework/label-syncer/syncmetrics"
	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
	"github.com/kubevirt-plugins/framework/plugin-controller/certmetrics"
	"github.com/kubevirt-plugins/framework/tests/framework/repo"
)

// recordingRegisterer records the names of the metrics registered on it,
// whether or not they have been observed (Gather would list only those).
type recordingRegisterer struct{ names []string }

var descName = regexp.MustCompile(`fqName: "([^"]*)"`)

func (r *recordingRegisterer) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		if m := descName.FindStringSubmatch(d.String()); m != nil {
			r.names = append(r.names, m[1])
		}
	}
	return nil
}

func (r *recordingRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = r.Register(c)
	}
}

func (r *recordingRegisterer) Unregister(prometheus.Collector) bool { return false }

// TestMetricNamesAreTheConstantsInTheNamespaceAndDocumented fails when a
// component registers a metric under a name its constants do not hold,
// when a name leaves the project's namespace or the component's prefix,
// and when a metric is renamed without its package documentation.
func TestMetricNamesAreTheConstantsInTheNamespaceAndDocumented(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		component string // the prefix after the namespace
		doc       string // the package documentation, from the repository root
		constants []string
		register  func(prometheus.Registerer) error
	}{
		{
			"launcher_hook", "launcher-runtime/pipeline/doc.go",
			[]string{pipeline.MetricHookDuration, pipeline.MetricHookOutcomes, pipeline.MetricHookOverlaps, pipeline.MetricCELCostLimitExceeded},
			func(reg prometheus.Registerer) error {
				_, err := pipeline.New(nil, pipeline.Options{Registerer: reg})
				return err
			},
		},
		{
			"launcher_hook", "handler-runtime/launchermetrics/doc.go",
			[]string{launchermetrics.MetricHookOutcomes, launchermetrics.MetricCELCostLimitExceeded, launchermetrics.MetricHookDuration, launchermetrics.MetricHookOverlaps},
			func(reg prometheus.Registerer) error {
				_, err := launchermetrics.New(launchermetrics.Options{Plugins: noPlugins{}, Registerer: reg})
				return err
			},
		},
		{
			"node_hook", "handler-runtime/dispatch/doc.go",
			[]string{dispatch.MetricCallDuration, dispatch.MetricIgnoredFailures, dispatch.MetricDispatchDuration,
				dispatch.MetricDispatchesInFlight, dispatch.MetricVMIWait, dispatch.MetricCELCostLimitExceeded},
			func(reg prometheus.Registerer) error {
				d, err := dispatch.New(dispatch.Options{Plugins: noPlugins{}, Registerer: reg})
				if err == nil {
					err = d.Close()
				}
				return err
			},
		},
		{
			"plugin_controller", "plugin-controller/certmetrics/doc.go",
			[]string{certmetrics.MetricExpiration},
			func(reg prometheus.Registerer) error {
				return reg.Register(certmetrics.New("/nonexistent/tls.crt"))
			},
		},
		{
			"label_syncer", "label-syncer/syncmetrics/doc.go",
			[]string{syncmetrics.MetricPatches, syncmetrics.MetricPatchConflicts, syncmetrics.MetricSyncDuration,
				syncmetrics.MetricSyncs, syncmetrics.MetricRefusedKeys},
			func(reg prometheus.Registerer) error {
				_, err := syncmetrics.New(reg)
				return err
			},
		},
	} {
		t.Run(c.component, func(t *testing.T) {
			rec := &recordingRegisterer{}
			if err := c.register(rec); err != nil {
				t.Fatal(err)
			}
			if got, want := slices.Sorted(slices.Values(rec.names)), slices.Sorted(slices.Values(c.constants)); !slices.Equal(got, want) {
				t.Errorf("registered %v, the constants name %v", got, want)
			}
			doc, err := os.ReadFile(filepath.Join(root, c.doc))
			if err != nil {
				t.Fatal(err)
			}
			prefix := pluginv1alpha1.MetricsNamespace + "_" + c.component + "_"
			for _, name := range c.constants {
				if !strings.HasPrefix(name, prefix) {
					t.Errorf("%s does not begin with %s", name, prefix)
				}
				if !regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`).Match(doc) {
					t.Errorf("%s is not listed in its package documentation (%s)", name, c.doc)
				}
			}
		})
	}
}

// virt-handler exposes the launcher hook counts the launchers report under
// the names the launcher's pipeline registers them, which the rules and the
// dashboard of deploy/monitoring read.
func TestVirtHandlerExposesTheLauncherSeriesUnderTheLaunchersNames(t *testing.T) {
	for handler, launcher := range map[string]string{
		launchermetrics.MetricHookOutcomes:         pipeline.MetricHookOutcomes,
		launchermetrics.MetricCELCostLimitExceeded: pipeline.MetricCELCostLimitExceeded,
		launchermetrics.MetricHookDuration:         pipeline.MetricHookDuration,
		launchermetrics.MetricHookOverlaps:         pipeline.MetricHookOverlaps,
	} {
		if handler != launcher {
			t.Errorf("virt-handler exposes %s, the launcher registers %s", handler, launcher)
		}
	}
}

// noPlugins is a Plugin store that holds none.
type noPlugins struct{}

func (noPlugins) Snapshot() (store.Snapshot, error) { return store.Snapshot{Enabled: true}, nil }
