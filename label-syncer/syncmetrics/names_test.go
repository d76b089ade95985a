// SPDX-License-Identifier: Apache-2.0

package syncmetrics

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// recordingRegisterer records the names of the metrics registered on it.
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

// TestMetricNamesAreTheConstantsAndDocumented checks that New registers
// exactly the metrics the Metric* constants name, each under the label
// syncer's prefix, and that the package documentation lists each by its
// name: renaming a metric without its documentation fails here.
func TestMetricNamesAreTheConstantsAndDocumented(t *testing.T) {
	want := []string{MetricPatches, MetricPatchConflicts, MetricSyncDuration, MetricSyncs, MetricRefusedKeys}
	rec := &recordingRegisterer{}
	if _, err := New(rec); err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(slices.Values(rec.names)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("New registers %v, the constants name %v", got, want)
	}
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range want {
		if !strings.HasPrefix(name, metricsNamespace+"_label_syncer_") {
			t.Errorf("%s does not begin with %s_label_syncer_", name, metricsNamespace)
		}
		if !regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`).Match(doc) {
			t.Errorf("%s is not listed in the package documentation (doc.go)", name)
		}
	}
}
