// SPDX-License-Identifier: Apache-2.0

// Command migration-tuner is a PreMigrationSource sidecar that tunes live
// migration per VMI from its labels. See README.md.
//
// Its main has the same shape as every sample's on purpose: each sample is
// meant to be read and copied on its own, so none imports a shared main.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr/funcr"

	"github.com/kubevirt-plugins/framework/protos/sdk"
	"github.com/kubevirt-plugins/framework/sample-sidecars/migration-tuner/tuner"
)

func main() {
	plugin := flag.String("plugin-name", "migration-tuner", "Plugin name; the socket is <socket-root>/<plugin-name>/<socket-name>")
	root := flag.String("socket-root", sdk.DefaultSocketRoot, "directory holding the plugin socket directories")
	socketName := flag.String("socket-name", sdk.DefaultSocketName, "socket file name")
	prefix := flag.String("label-prefix", tuner.DefaultLabelPrefix, "prefix of the VMI labels the tuner reads")
	grace := flag.Duration("grace-period", sdk.DefaultGracePeriod, "how long calls in flight may finish after SIGTERM before they are cancelled")
	verbosity := flag.Int("v", 0, "log verbosity")
	flag.Parse()

	log := funcr.NewJSON(func(obj string) { fmt.Fprintln(os.Stderr, obj) }, funcr.Options{Verbosity: *verbosity})
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	err := sdk.ServeLauncherHooks(ctx, *plugin, tuner.New(tuner.Options{LabelPrefix: *prefix}),
		sdk.WithLogger(log), sdk.WithSocketRoot(*root), sdk.WithSocketName(*socketName), sdk.WithGracePeriod(*grace))
	if err != nil {
		log.Error(err, "migration-tuner failed")
		os.Exit(1)
	}
}
