// SPDX-License-Identifier: Apache-2.0

// Package linediff renders the difference between two texts as a unified
// diff, line by line, for kvpctl guest-definition --diff.
package linediff
