// SPDX-License-Identifier: Apache-2.0

// Package demo is the end-to-end scenario behind `make demo`: a real API
// server with the Plugin and KubeVirt CRDs, the plugin-controller and
// label-syncer binaries, two libvirtd containers as two nodes, the sample
// plugins from sample-sidecars running as containers from their images,
// and one VM taken through its life (start, label sync, live migration,
// stop) by the handler and launcher runtimes. Every step prints what it
// did and checks it; Run reports whether every check passed.
//
// The same Run backs the demo command (cmd/demo, run by hack/demo.sh) and
// TestDemoScenario, so the demo cannot drift from what the tests check.
package demo
