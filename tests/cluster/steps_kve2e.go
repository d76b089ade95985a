// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"time"
)

// e2eEnv set to 0 leaves KubeVirt's own Plugins e2e (startE2E, kvE2E)
// out, for a shorter run while working on something else; make test and
// make demo run it.
const e2eEnv = "KVP_KUBEVIRT_E2E"

// e2eTimeout bounds the step that waits for the e2e: its 18 specs took 20
// to 28 minutes of a 2-core machine, past the scenario's StepTimeout.
const e2eTimeout = 45 * time.Minute

// e2eRunTimeout bounds the e2e in the background: its cluster, KubeVirt
// and deploy/ on it, the specs.
const e2eRunTimeout = 75 * time.Minute

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

func (s *scenario) e2eEnabled() bool { return os.Getenv(e2eEnv) != "0" && !s.pristine }

// e2eRun is KubeVirt's Plugins e2e running in the background; done is
// closed when it has ended, out, err and took then set.
type e2eRun struct {
	done chan struct{}
	out  string
	err  error
	took time.Duration
}

// startE2E starts KubeVirt's own Plugins e2e, with KubeVirt's test
// framework, on a kind cluster of its own (kubevirt/e2e-cluster.sh: the
// patched build tagged s.kv.tag deployed by its operator, deploy/ on top),
// in the background: its specs are serial and its Plugins cluster-wide, so
// on the scenario's cluster it could only run after every other step; on
// its own it runs beside them (kvE2E waits for it). Its cluster is deleted
// when it ends, unless the scenario keeps its clusters.
// Not on the unpatched build: the e2e in the guide's shape is part of the
// patch series.
func (s *scenario) startE2E(ctx context.Context) {
	if !s.e2eEnabled() || s.e2e != nil {
		return
	}
	run := &e2eRun{done: make(chan struct{})}
	s.e2e = run
	// Not the step's context, which ends with the step.
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e2eRunTimeout)
	tag := s.kv.tag
	s.Show("KubeVirt's Plugins e2e started in the background on a kind cluster of its own (kubevirt/e2e-cluster.sh " + tag +
		"): the patched release deployed by its operator, deploy/ on top, tests/plugin_test.go compiled with KubeVirt's test framework; the last step waits for it")
	go func() {
		defer close(run.done)
		defer cancel()
		start := time.Now()
		if run.err = s.waitImages(bctx); run.err == nil {
			run.out, run.err = s.scriptGroup(bctx, "kubevirt/e2e-cluster.sh", tag)
		}
		run.took = time.Since(start)
		if !s.keep {
			// Its memory and CPUs back to the scenario's cluster at once.
			_, _ = s.script(context.WithoutCancel(bctx), "kubevirt/e2e-cluster.sh", "down")
		}
	}()
	s.Cleanup(func() error {
		cancel()
		<-run.done
		return nil
	})
}

// kvE2E waits for KubeVirt's Plugins e2e (startE2E): every spec must have
// run and passed.
func (s *scenario) kvE2E(ctx context.Context) error {
	if s.e2e == nil {
		return fmt.Errorf("KubeVirt's Plugins e2e was not started: the step on KubeVirt as released did not run")
	}
	start := time.Now()
	select {
	case <-s.e2e.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	ran, total, passed, failed, skipped, ok := e2eCounts(s.e2e.out)
	s.Check(fmt.Sprintf("KubeVirt's Plugins e2e: all %d specs ran and passed", e2eSpecs),
		s.e2e.err == nil && ok && ran == e2eSpecs && total == e2eSpecs && passed == e2eSpecs && failed == 0 && skipped == 0,
		"ran %d of %d, %d passed, %d failed, %d skipped; %s on its cluster from its start (the cluster and KubeVirt included), %s of it after the other steps%s (the specs' output: bin/kubevirt-e2e/output.txt)",
		ran, total, passed, failed, skipped, s.e2e.took.Round(time.Second), time.Since(start).Round(time.Second), errSuffix(s.e2e.err))
	return nil
}
