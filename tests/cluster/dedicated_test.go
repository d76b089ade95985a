// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"slices"
	"testing"
)

func TestParseCPUListReadsRangesAndSingles(t *testing.T) {
	for in, want := range map[string][]int{"": nil, "1": {1}, "0-1": {0, 1}, "0-2,5": {0, 1, 2, 5}, "3,1-2": {1, 2, 3}} {
		got, err := parseCPUList(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("parseCPUList(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := parseCPUList("a-b"); err == nil {
		t.Error("parseCPUList(\"a-b\") gave no error")
	}
}

func TestADedicatedVMGetsAGuaranteedCompute(t *testing.T) {
	pod := newLauncherPod(newVMI(newDedicatedVM("d", "7c1e4b9a-2d6f-4a83-b5e0-9f3c8d2a6b14")), "src", "n")
	r := pod.Spec.Containers[0].Resources
	if !sameResources(r.Requests, r.Limits) || r.Limits.Cpu().String() != "1" || r.Limits.Memory().String() != "640Mi" {
		t.Errorf("compute resources: requests %s, limits %s; want 1 CPU and 640Mi (the 192Mi guest and the 448Mi overhead), requests equal to limits",
			resourceText(r.Requests), resourceText(r.Limits))
	}
	plain := newLauncherPod(newVMI(newVM("p", "5e9c7a1d-3b2f-4c8e-9a61-0d4f2b7e8c13")), "src", "n")
	if len(plain.Spec.Containers[0].Resources.Limits) != 0 {
		t.Errorf("a VM without dedicated CPUs got limits %v", plain.Spec.Containers[0].Resources.Limits)
	}
}
