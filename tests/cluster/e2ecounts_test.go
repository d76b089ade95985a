// SPDX-License-Identifier: Apache-2.0

package cluster

import "testing"

// TestE2ECountsReadGinkgosSummary reads the summary ginkgo prints at the
// end of a run, passed or failed, and reports a run without one as unread.
func TestE2ECountsReadGinkgosSummary(t *testing.T) {
	passed := "...\nRan 18 of 18 Specs in 912.304 seconds\nSUCCESS! -- 18 Passed | 0 Failed | 0 Pending | 0 Skipped\nPASS\n"
	if ran, total, p, f, sk, ok := e2eCounts(passed); !ok || ran != 18 || total != 18 || p != 18 || f != 0 || sk != 0 {
		t.Errorf("a passed run: %d %d %d %d %d %v", ran, total, p, f, sk, ok)
	}
	failed := "Ran 15 of 17 Specs in 700.1 seconds\nFAIL! -- 14 Passed | 1 Failed | 0 Pending | 2 Skipped\n--- FAIL: TestPlugins (700.12s)\n"
	if ran, total, p, f, sk, ok := e2eCounts(failed); !ok || ran != 15 || total != 17 || p != 14 || f != 1 || sk != 2 {
		t.Errorf("a failed run: %d %d %d %d %d %v", ran, total, p, f, sk, ok)
	}
	if _, _, _, _, _, ok := e2eCounts("panic: the suite did not start\n"); ok {
		t.Error("output without a summary was read as one")
	}
}
