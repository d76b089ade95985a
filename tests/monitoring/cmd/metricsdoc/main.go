// SPDX-License-Identifier: Apache-2.0

// Command metricsdoc writes docs/metrics.md: every metric the components
// register, with its type, labels and help, read from the code that
// registers it (package metricsdoc). `make generate` runs it, and
// `make verify` fails when the file it wrote differs from the committed one.
//
//	go run ./monitoring/cmd/metricsdoc -o ../docs/metrics.md
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/kubevirt-plugins/framework/tests/monitoring/metricsdoc"
)

func main() {
	out := flag.String("o", "", "file to write; default: standard output")
	flag.Parse()
	sources, err := metricsdoc.Inventory()
	if err != nil {
		fmt.Fprintln(os.Stderr, "metricsdoc:", err)
		os.Exit(1)
	}
	md := metricsdoc.Markdown(sources)
	if *out == "" {
		_, err = os.Stdout.Write(md)
	} else {
		err = os.WriteFile(*out, md, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "metricsdoc:", err)
		os.Exit(1)
	}
}
