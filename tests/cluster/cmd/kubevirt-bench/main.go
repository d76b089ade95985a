// SPDX-License-Identifier: Apache-2.0

// Command kubevirt-bench boots VMs on KubeVirt v1.9.0 as released (its
// alpha-1 CEL hook, and no Plugin) and, on the same cluster moved to the
// patched build, with the framework's launcher CEL hook making the same
// change, no Plugin and the three Go sample sidecars
// (tests/cluster.RunKubeVirtBench). `make bench-kubevirt` runs it;
// docs/benchmarks-kubevirt.md reports its figures.
//
//	kubevirt-bench [-boots N] [-density N] [-report FILE] [-log FILE] [-keep]
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
	boots := flag.Int("boots", 10, "boots of each case, the cases of a build in turn")
	density := flag.Int("density", 10, "VMs booted at once on one worker")
	reportPath := flag.String("report", "", "also write the figures, as Markdown, to this file")
	logPath := flag.String("log", "", "write the scripts', kubectl's and the components' output to this file")
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
	res := cluster.RunKubeVirtBench(ctx, cluster.KubeVirtBenchOptions{Out: os.Stdout, Log: logw, Report: report, Boots: *boots, Density: *density, Keep: *keep})
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
