// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	tclog "github.com/testcontainers/testcontainers-go/log"

	"github.com/kubevirt-plugins/framework/tests/demo"
)

// fileLogger sends testcontainers' messages to the log file instead of the
// transcript.
type fileLogger struct{ f *os.File }

func (l fileLogger) Printf(format string, v ...any) {
	fmt.Fprintf(l.f, "testcontainers | "+format+"\n", v...)
}

func main() {
	logPath := flag.String("log", "", "file receiving the logs of the components (default: a file in the temporary directory, kept after the run)")
	flag.Parse()

	var logFile *os.File
	var err error
	if *logPath == "" {
		logFile, err = os.CreateTemp("", "kvp-demo-*.log")
	} else {
		logFile, err = os.Create(*logPath)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(2)
	}
	defer logFile.Close()
	fmt.Printf("KubeVirt Plugins demo; component logs: %s\n", logFile.Name())
	tclog.SetDefault(fileLogger{logFile})

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res := demo.Run(ctx, demo.Options{Out: os.Stdout, Log: logFile})
	if !res.Passed() {
		fmt.Printf("\ndemo FAILED; component logs: %s\n", logFile.Name())
		stop()
		logFile.Close()
		os.Exit(1)
	}
	fmt.Printf("\ndemo PASSED\n")
}
