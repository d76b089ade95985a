// SPDX-License-Identifier: Apache-2.0

package linediff

import (
	"fmt"
	"strings"
)

// Context is the number of unchanged lines shown around each change.
const Context = 3

type opKind byte

const (
	opEqual  opKind = ' '
	opDelete opKind = '-'
	opInsert opKind = '+'
)

type op struct {
	kind opKind
	a, b int // line index in a and b before this op
	text string
}

// Unified returns the unified diff of a and b with the given file labels,
// or "" when they are equal. Lines are compared exactly.
func Unified(aName, bName, a, b string) string {
	al, bl := splitLines(a), splitLines(b)
	ops := diff(al, bl)
	changed := false
	for _, o := range ops {
		if o.kind != opEqual {
			changed = true
			break
		}
	}
	if !changed {
		return ""
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- %s\n+++ %s\n", aName, bName)
	for _, h := range hunks(ops) {
		writeHunk(&sb, ops[h[0]:h[1]])
	}
	return sb.String()
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// diff computes an edit script through the longest common subsequence. The
// table is len(a)*len(b) integers, fine for domains of a few thousand lines.
func diff(a, b []string) []op {
	n, m := len(a), len(b)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []op
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, op{opEqual, i, j, a[i]})
			i++
			j++
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			// Deletions first, as diff(1) prints them.
			ops = append(ops, op{opDelete, i, j, a[i]})
			i++
		default:
			ops = append(ops, op{opInsert, i, j, b[j]})
			j++
		}
	}
	return ops
}

// hunks returns [start, end) ranges of ops: each change with up to Context
// equal lines around it, overlapping ranges merged.
func hunks(ops []op) [][2]int {
	var out [][2]int
	for i, o := range ops {
		if o.kind == opEqual {
			continue
		}
		start, end := max(i-Context, 0), min(i+Context+1, len(ops))
		if len(out) > 0 && start <= out[len(out)-1][1] {
			out[len(out)-1][1] = max(out[len(out)-1][1], end)
			continue
		}
		out = append(out, [2]int{start, end})
	}
	return out
}

func writeHunk(sb *strings.Builder, ops []op) {
	var aLen, bLen int
	for _, o := range ops {
		if o.kind != opInsert {
			aLen++
		}
		if o.kind != opDelete {
			bLen++
		}
	}
	fmt.Fprintf(sb, "@@ -%s +%s @@\n", rangeOf(ops[0].a, aLen), rangeOf(ops[0].b, bLen))
	for _, o := range ops {
		sb.WriteByte(byte(o.kind))
		sb.WriteString(o.text)
		if !strings.HasSuffix(o.text, "\n") {
			sb.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// rangeOf formats a hunk range: 1-based start, and the length unless it is 1.
// An empty range names the line before it, as diff(1) does.
func rangeOf(start, length int) string {
	switch length {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, length)
}
