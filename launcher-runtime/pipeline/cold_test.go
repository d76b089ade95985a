// SPDX-License-Identifier: Apache-2.0

package pipeline_test

import (
	"testing"

	"github.com/kubevirt-plugins/framework/launcher-runtime/pipeline"
)

// TestNoPluginBuildsNothing: a launcher handed no Plugin, the case of most
// VMs, pays for nothing the hooks would need (no CEL environment, no
// connection): New, GuestDefinition and PreBoot allocate a few dozen times.
// Building a CEL environment allocates thousands of times. Time and memory
// in a fresh process are measured by tests/coldstart.
func TestNoPluginBuildsNothing(t *testing.T) {
	vmi, domain := testVMI(t), testDomain(t)
	ctx := t.Context()
	allocs := testing.AllocsPerRun(5, func() {
		p, err := pipeline.New(nil, pipeline.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if out, err := p.GuestDefinition(ctx, vmi, domain, pipeline.Boot); err != nil || out != domain {
			t.Fatalf("GuestDefinition = %p, %v; want the domain itself", out, err)
		}
		if err := p.PreBoot(ctx, vmi, pipeline.Artifacts{}); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 60 {
		t.Fatalf("New, GuestDefinition and PreBoot with no Plugin allocated %.0f times, want at most 60", allocs)
	}
}
