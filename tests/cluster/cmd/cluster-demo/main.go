// SPDX-License-Identifier: Apache-2.0

// Command cluster-demo runs the real-cluster scenario (tests/cluster) with
// its transcript on standard output: `make demo` runs it (hack/demo.sh).
//
//	cluster-demo [-log FILE] [-keep] [-pristine]
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
	logPath := flag.String("log", "", "write the scripts', kubectl's and the components' output to this file")
	keep := flag.Bool("keep", false, "leave the cluster running at the end")
	pristine := flag.Bool("pristine", false, "run the phase on KubeVirt itself on v1.9.0 without the framework's patches, every step, to see which checks need them")
	flag.Parse()
	log := io.Discard
	if *logPath != "" {
		f, err := os.Create(*logPath)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		defer f.Close()
		log = f
		fmt.Printf("the output of the scripts, kubectl and the components goes to %s\n", *logPath)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res := cluster.Run(ctx, cluster.Options{Out: os.Stdout, Log: log, Keep: *keep, Pristine: *pristine})
	if !res.Passed() {
		os.Exit(1)
	}
}
