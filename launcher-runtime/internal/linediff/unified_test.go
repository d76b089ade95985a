// SPDX-License-Identifier: Apache-2.0

package linediff

import "testing"

func TestUnified(t *testing.T) {
	for _, tc := range []struct {
		name, a, b, want string
	}{
		{"Equal", "a\nb\n", "a\nb\n", ""},
		{"ChangeInMiddle",
			"1\n2\n3\n4\n5\n6\n7\n8\n9\n",
			"1\n2\n3\n4\nfive\n6\n7\n8\n9\n",
			"--- a\n+++ b\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"},
		{"InsertAtStart", "x\n", "new\nx\n", "--- a\n+++ b\n@@ -1 +1,2 @@\n+new\n x\n"},
		{"DeleteAll", "x\ny\n", "", "--- a\n+++ b\n@@ -1,2 +0,0 @@\n-x\n-y\n"},
		{"TwoHunks",
			"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n",
			"one\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\ntwelve\n",
			"--- a\n+++ b\n@@ -1,4 +1,4 @@\n-1\n+one\n 2\n 3\n 4\n@@ -9,4 +9,4 @@\n 9\n 10\n 11\n-12\n+twelve\n"},
		{"NoFinalNewline", "a", "b", "--- a\n+++ b\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Unified("a", "b", tc.a, tc.b); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
