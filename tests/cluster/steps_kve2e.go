// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// e2eEnv set to 0 leaves KubeVirt's own Plugins e2e (kvE2E, the last of
// the scenario's KubeVirt steps) out, for a shorter run while working on
// something else; make test and make demo run it.
const e2eEnv = "KVP_KUBEVIRT_E2E"

// e2eTimeout bounds the e2e step: its 18 specs took 24 to 28 minutes of a
// 2-core machine, past the scenario's StepTimeout.
const e2eTimeout = 45 * time.Minute

// e2eSpecs is the number of specs of the release's Plugins e2e
// (tests/plugin_test.go of v1.9.0, in the guide's shape since
// kubevirt/patches/0004): a run that ran fewer has skipped some.
const e2eSpecs = 18

var (
	e2eRan    = regexp.MustCompile(`(?m)^Ran (\d+) of (\d+) Specs`)
	e2eResult = regexp.MustCompile(`(?m)^(?:SUCCESS!|FAIL!) -- (\d+) Passed \| (\d+) Failed \| (\d+) Pending \| (\d+) Skipped`)
)

// e2eCounts reads ginkgo's summary: specs run and in the suite, passed,
// failed, skipped.
func e2eCounts(out string) (ran, total, passed, failed, skipped int, ok bool) {
	m := e2eRan.FindStringSubmatch(out)
	r := e2eResult.FindStringSubmatch(out)
	if m == nil || r == nil {
		return 0, 0, 0, 0, 0, false
	}
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	return atoi(m[1]), atoi(m[2]), atoi(r[1]), atoi(r[2]), atoi(r[4]), true
}

// kvE2E runs KubeVirt's own Plugins e2e with KubeVirt's test framework on
// the cluster (kubevirt/e2e.sh): every spec must run and pass.
// Not on the unpatched build: the e2e in the guide's shape is part of the
// patch series.
func (s *scenario) kvE2E(ctx context.Context) error {
	s.Show("kubevirt/e2e.sh " + s.kv.tag + ": tests/plugin_test.go of the patched release, compiled with KubeVirt's test framework, its helper images loaded into the nodes")
	start := time.Now()
	out, err := s.script(ctx, "kubevirt/e2e.sh", s.kv.tag)
	ran, total, passed, failed, skipped, ok := e2eCounts(out)
	s.Check(fmt.Sprintf("KubeVirt's Plugins e2e: all %d specs ran and passed", e2eSpecs),
		err == nil && ok && ran == e2eSpecs && total == e2eSpecs && passed == e2eSpecs && failed == 0 && skipped == 0,
		"ran %d of %d, %d passed, %d failed, %d skipped in %s%s (the specs' output: bin/kubevirt-e2e/output.txt)",
		ran, total, passed, failed, skipped, time.Since(start).Round(time.Second), errSuffix(err))
	return nil
}
