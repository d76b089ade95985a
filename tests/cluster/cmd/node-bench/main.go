// SPDX-License-Identifier: Apache-2.0

// Command node-bench measures what a VM pays on the node, on the kind
// cluster of the real-cluster scenario (tests/cluster.RunBench): boot
// latency itemised for four cases, each sidecar's memory in its cgroup,
// and one worker with many VMs booted at once. `make bench-node` runs it;
// docs/benchmarks.md reports its figures.
//
//	node-bench [-boots N] [-density N] [-report FILE] [-log FILE] [-reuse] [-keep]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/kubevirt-plugins/framework/tests/cluster"
)

func main() {
	boots := flag.Int("boots", 10, "boots of each case, the cases in turn")
	density := flag.Int("density", 10, "VMs booted at once on one worker")
	reportPath := flag.String("report", "", "also write the figures, as Markdown, to this file")
	logPath := flag.String("log", "", "write the scripts', kubectl's and the components' output to this file")
	reuse := flag.Bool("reuse", false, "run on the cluster an earlier run kept instead of making one")
	keep := flag.Bool("keep", false, "leave the cluster running at the end")
	flag.Parse()
	logw := io.Discard
	if *logPath != "" {
		f := create(*logPath)
		defer f.Close()
		logw = f
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	report := io.Writer(os.Stdout)
	if *reportPath != "" {
		f := create(*reportPath)
		defer f.Close()
		report = io.MultiWriter(os.Stdout, f)
	}
	res, _ := cluster.RunBench(ctx, cluster.BenchOptions{Out: os.Stdout, Log: logw, Report: report,
		Boots: *boots, Density: *density, Reuse: *reuse, Keep: *keep})
	if !res.Passed() {
		os.Exit(1)
	}
}

// create creates the file at path, or exits 2 saying why it cannot.
func create(path string) *os.File {
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	return f
}
