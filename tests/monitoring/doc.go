// SPDX-License-Identifier: Apache-2.0

// Package monitoring reads what deploy/monitoring ships, for its tests and
// for the real-cluster scenario that loads the same rules into a real
// Prometheus: the PrometheusRules of the kustomize components (as
// kustomize builds them) written out as Prometheus rule files, the
// queries of the Grafana dashboard, and the metric names a PromQL
// expression reads. It also runs promtool, which `make setup` installs
// (Debian's prometheus package).
//
// Its tests, run by `make test`, check that:
//
//   - promtool accepts the rules (promtool check rules) and the dashboard's
//     queries (each written as a recording rule and checked the same way);
//   - every alert has a promtool unit test file,
//     deploy/monitoring/tests/<AlertName>.yaml, with a test group that
//     fires it, one where a blip leaves it quiet and one where a healthy
//     series does, and that promtool test rules passes them all;
//   - alerts and runbooks (docs/runbooks/<AlertName>.md) line up one to
//     one, each runbook in the Meaning, Impact, Diagnosis, Mitigation
//     shape, and every alert has a severity label and summary,
//     description and runbook_url annotations, the URL ending in its
//     runbook's path;
//   - every series a rule or a panel reads is one the code registers
//     (docs/metrics.md, from package metricsdoc), a recording rule of
//     the components, or a standard series listed with its source;
//   - deploy/ alone holds no Prometheus Operator object, and adding the
//     components to it builds;
//   - docs/metrics.md is what cmd/metricsdoc writes.
package monitoring
