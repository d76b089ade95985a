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
