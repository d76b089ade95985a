// SPDX-License-Identifier: Apache-2.0

// Package coldstart measures what one VM costs a fresh process: a
// virt-launcher building its hook pipeline from what virt-handler handed it
// and running GuestDefinition once (PreBoot too), and a virt-handler
// dispatching a VMI, each in a new process, next to a process shaped as
// KubeVirt's own launcher evaluates the same CEL hook. The benchmark builds
// two small drivers (cmd/framework-driver, cmd/upstream-driver) and runs
// them many times, interleaved; each driver measures its work in-process
// (package internal/probe). See docs/benchmarks.md.
package coldstart
