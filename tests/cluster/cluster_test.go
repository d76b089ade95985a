// SPDX-License-Identifier: Apache-2.0

package cluster_test

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubevirt-plugins/framework/tests/cluster"
	"github.com/kubevirt-plugins/framework/tests/framework/repo"
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
	// The scripts' output also goes to a file, so that a run that passed
	// still says where its time went (kubevirt/deploy.sh's parts, say).
	var log io.Writer = &logs
	if root, err := repo.Root(); err == nil {
		name := filepath.Join(root, "bin", "cluster-scenario.log")
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err == nil {
			if f, err := os.Create(name); err == nil {
				defer f.Close()
				log = io.MultiWriter(&logs, f)
				t.Logf("the output of the scripts, kubectl and the components also goes to %s", name)
			}
		}
	}
	res := cluster.Run(t.Context(), cluster.Options{Out: transcript.TestLog(t), Log: log})
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
