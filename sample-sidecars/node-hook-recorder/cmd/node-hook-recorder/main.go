// SPDX-License-Identifier: Apache-2.0

// Command node-hook-recorder is a node hook server that records every
// lifecycle event it receives to a JSON lines file. See README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/protos/sdk"
	"github.com/kubevirt-plugins/framework/sample-sidecars/node-hook-recorder/recorder"
)

func main() {
	socket := flag.String("socket", path.Join(pluginv1alpha1.NodeHookSocketsRoot, "plugins", "node-hook-recorder.sock"), "Unix socket to serve NodeHookService on")
	events := flag.String("events-file", "/var/lib/node-hook-recorder/events.jsonl", "JSON lines file events are appended to")
	delay := flag.Duration("delay", 0, "how long each call takes after it is recorded (for example 2s)")
	failAt := flag.String("fail-hook-points", "", "comma separated hook points to answer with an error (for example PreVMStart,OnVMStop)")
	grace := flag.Duration("grace-period", sdk.DefaultGracePeriod, "how long calls in flight may finish after SIGTERM before they are cancelled")
	verbosity := flag.Int("v", 0, "log verbosity")
	flag.Parse()

	log := funcr.NewJSON(func(obj string) { fmt.Fprintln(os.Stderr, obj) }, funcr.Options{Verbosity: *verbosity})
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, log, *socket, *events, *delay, *failAt, *grace); err != nil {
		log.Error(err, "node-hook-recorder failed")
		os.Exit(1)
	}
}

func run(ctx context.Context, log logr.Logger, socket, events string, delay time.Duration, failAt string, grace time.Duration) error {
	fail, err := recorder.ParseHookPoints(strings.Split(failAt, ","))
	if err != nil {
		return fmt.Errorf("--fail-hook-points: %w", err)
	}
	rec, err := recorder.New(recorder.Options{Path: events, Delay: delay, FailHookPoints: fail, Logger: log})
	if err != nil {
		return err
	}
	defer rec.Close()
	return sdk.ServeNodeHooks(ctx, socket, rec, sdk.WithLogger(log), sdk.WithGracePeriod(grace))
}
