// SPDX-License-Identifier: Apache-2.0

package monitoring

import (
	"fmt"
	"slices"
	"strings"
)

// Words of PromQL that are not metric names when they stand alone: the
// aggregation operators (a name followed by "(" is a function or an
// aggregation anyway, but "sum by (x) (...)" puts by between), the
// keywords and the set operators.
var (
	aggregations = []string{"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
		"count_values", "bottomk", "topk", "quantile", "limitk", "limit_ratio"}
	labelListKeywords = []string{"by", "without", "on", "ignoring", "group_left", "group_right"}
	otherKeywords     = []string{"and", "or", "unless", "bool", "offset", "atan2", "inf", "nan"}
)

// MetricNames returns the metric names expr reads, in order of first
// appearance: a small scanner, not a parser (promtool parses), that skips
// strings, label matchers, ranges, label lists, functions and keywords,
// enough for the expressions of the rules and the dashboard.
func MetricNames(expr string) ([]string, error) {
	var names []string
	i := 0
	for i < len(expr) {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			end, err := skipString(expr, i)
			if err != nil {
				return nil, err
			}
			i = end
		case c == '{':
			end, err := skipTo(expr, i, '}')
			if err != nil {
				return nil, err
			}
			i = end
		case c == '[':
			end, err := skipTo(expr, i, ']')
			if err != nil {
				return nil, err
			}
			i = end
		case c == '#':
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case isDigit(c) || c == '.':
			// Numbers and durations (1e3, 0x1f, 5m, 1h30m).
			for i < len(expr) && (isIdent(expr[i]) || expr[i] == '.') {
				i++
			}
		case isIdentStart(c):
			j := i
			for j < len(expr) && isIdent(expr[j]) {
				j++
			}
			word := expr[i:j]
			next := j
			for next < len(expr) && strings.ContainsRune(" \t\r\n", rune(expr[next])) {
				next++
			}
			switch {
			case slices.Contains(labelListKeywords, strings.ToLower(word)):
				// A list of label names may follow; group_left may have none.
				if next < len(expr) && expr[next] == '(' {
					end, err := skipTo(expr, next, ')')
					if err != nil {
						return nil, err
					}
					j = end
				}
			case next < len(expr) && expr[next] == '(':
				// A function or an aggregation.
			case slices.Contains(aggregations, strings.ToLower(word)),
				slices.Contains(otherKeywords, strings.ToLower(word)):
			default:
				if !slices.Contains(names, word) {
					names = append(names, word)
				}
			}
			i = j
		default:
			i++
		}
	}
	return names, nil
}

// skipString returns the index after the string literal starting at i.
func skipString(s string, i int) (int, error) {
	quote := s[i]
	for j := i + 1; j < len(s); j++ {
		switch {
		case s[j] == '\\' && quote != '`':
			j++
		case s[j] == quote:
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("unterminated string at %d in %q", i, s)
}

// skipTo returns the index after the first close found after i outside
// string literals.
func skipTo(s string, i int, close byte) (int, error) {
	for j := i + 1; j < len(s); {
		switch s[j] {
		case '"', '\'', '`':
			end, err := skipString(s, j)
			if err != nil {
				return 0, err
			}
			j = end
		case close:
			return j + 1, nil
		default:
			j++
		}
	}
	return 0, fmt.Errorf("no %q after %d in %q", close, i, s)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
func isIdent(c byte) bool { return isIdentStart(c) || isDigit(c) }
