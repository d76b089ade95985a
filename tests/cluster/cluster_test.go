// SPDX-License-Identifier: Apache-2.0

package cluster_test

import (
	"os"
	"strings"
	"testing"

	"github.com/kubevirt-plugins/framework/tests/cluster"
	"github.com/kubevirt-plugins/framework/tests/framework/transcript"
)

// TestClusterScenario runs the real-cluster scenario: a kind cluster built
// here, KubeVirt v1.9.0 as released with a VM on it, moved to the patched
// build under the VM, deploy/ and the samples applied with kubectl, then
// VMs booted, relabelled, migrated between the workers and stopped through
// KubeVirt, and the faults. It needs Docker and minutes of a 2-core
// machine, so it runs when KVP_CLUSTER is set, as hack/test.sh does.
func TestClusterScenario(t *testing.T) {
	if os.Getenv("KVP_CLUSTER") == "" {
		t.Skip("set KVP_CLUSTER=1 to run the real-cluster scenario (make test does)")
	}
	var logs strings.Builder
	res := cluster.Run(t.Context(), cluster.Options{Out: transcript.TestLog(t), Log: &logs})
	if res.Passed() {
		return
	}
	t.Logf("output of the scripts, kubectl and the components:\n%s", logs.String())
	for _, c := range res.Failed() {
		t.Errorf("step %q: check %q failed: %s", c.Step, c.Name, c.Detail)
	}
	if res.Err != nil {
		t.Errorf("the scenario stopped early: %v", res.Err)
	}
}
