// SPDX-License-Identifier: Apache-2.0

package demo_test

import (
	"strings"
	"testing"

	"github.com/kubevirt-plugins/framework/tests/demo"
	"github.com/kubevirt-plugins/framework/tests/framework/transcript"
)

// TestDemoScenario runs the `make demo` scenario headless: the whole system
// on one machine, every step checked. It fails when any check fails; the
// logs of the processes and containers are printed then.
func TestDemoScenario(t *testing.T) {
	var logs strings.Builder
	res := demo.Run(t.Context(), demo.Options{Out: transcript.TestLog(t), Log: &logs})
	if res.Passed() {
		return
	}
	t.Logf("logs of the components:\n%s", logs.String())
	for _, c := range res.Failed() {
		t.Errorf("step %q: check %q failed: %s", c.Step, c.Name, c.Detail)
	}
	if res.Err != nil {
		t.Errorf("the scenario stopped early: %v", res.Err)
	}
}
