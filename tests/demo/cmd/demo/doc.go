// SPDX-License-Identifier: Apache-2.0

// Command demo plays the scenario of package demo with its transcript on
// standard output: `make demo` runs it. The logs of the processes and
// containers it starts go to the file named by -log. It exits with status 1
// when any check fails, and removes everything it started, also on Ctrl-C.
package main
