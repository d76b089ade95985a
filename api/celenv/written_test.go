// SPDX-License-Identifier: Apache-2.0

package celenv

import (
	"slices"
	"testing"
)

// TestMergeWrittenListsTheFieldsTheExpressionChanged: the paths come from
// the literal the merge follows; fields set to what they held are left out,
// an element added empty is its own path, and a result that is the domain
// itself writes nothing. The test domain's CPU mode is host-model and it
// has two disks and no PAE feature.
func TestMergeWrittenListsTheFieldsTheExpressionChanged(t *testing.T) {
	e := newEnv(t, Options{})
	for _, tc := range []struct {
		name, expr string
		want       []string
	}{
		{"one attribute", `Domain{CPU: DomainCPU{Mode: "host-passthrough"}}`, []string{"CPU.Mode"}},
		{"an attribute set to the value it has", `Domain{CPU: DomainCPU{Mode: "host-model"}}`, nil},
		{"several fields at several depths", `Domain{Title: "t", CPU: DomainCPU{Mode: "host-passthrough", Topology: DomainCPUTopology{Cores: 8}}}`,
			[]string{"Title", "CPU.Mode", "CPU.Topology.Cores"}},
		{"a list is one path", `Domain{Devices: DomainDeviceList{Watchdogs: [DomainWatchdog{Model: "i6300esb"}]}}`, []string{"Devices.Watchdogs"}},
		{"a list edited by map()", `Domain{Devices: DomainDeviceList{Disks: domainSpec.Devices.Disks.map(d, DomainDisk{Device: d.Device, Target: d.Target, ReadOnly: DomainDiskReadOnly{}})}}`,
			[]string{"Devices.Disks"}},
		{"an element added empty", `Domain{Features: DomainFeatureList{PAE: DomainFeature{}}}`, []string{"Features.PAE"}},
		{"an element read back unchanged", `Domain{CPU: domainSpec.CPU, Devices: domainSpec.Devices}`, nil},
		{"a literal chosen by a conditional", `vmi.Labels["tier"] == "gold" ? Domain{Title: "gold"} : domainSpec`, []string{"Title"}},
		{"the domain itself", `domainSpec`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := e.DomainTransform(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			domain := loadDomain(t, "testdata/domain-small.xml")
			next, got, err := tr.MergeWritten(t.Context(), vmiWithLabels(map[string]string{"tier": "gold"}), domain)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("written %q, want %q", got, tc.want)
			}
			merged, err := tr.Merge(t.Context(), vmiWithLabels(map[string]string{"tier": "gold"}), domain)
			if err != nil {
				t.Fatal(err)
			}
			if marshalDomain(t, merged) != marshalDomain(t, next) {
				t.Error("MergeWritten's domain is not Merge's")
			}
		})
	}
}
