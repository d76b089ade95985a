// SPDX-License-Identifier: Apache-2.0

// Command template is a minimal sidecar to copy. See ../../README.md.
//
// Keep main thin: parse flags, build the handler, serve. The SDK creates
// the socket at <socket-root>/<plugin-name>/<socket-name>, stops gracefully
// when the context ends (SIGTERM from the kubelet) and removes the socket.
//
// The other samples' mains repeat this one on purpose: a sample is meant to
// be copied whole, so none of them imports a shared main.
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
	"github.com/kubevirt-plugins/framework/sample-sidecars/template/hook"
)

func main() {
	plugin := flag.String("plugin-name", "template", "Plugin name; the socket is <socket-root>/<plugin-name>/<socket-name>")
	root := flag.String("socket-root", sdk.DefaultSocketRoot, "directory holding the plugin socket directories")
	socketName := flag.String("socket-name", sdk.DefaultSocketName, "socket file name")
	grace := flag.Duration("grace-period", sdk.DefaultGracePeriod, "how long calls in flight may finish after SIGTERM before they are cancelled")
	verbosity := flag.Int("v", 0, "log verbosity")
	flag.Parse()

	log := funcr.NewJSON(func(obj string) { fmt.Fprintln(os.Stderr, obj) }, funcr.Options{Verbosity: *verbosity})
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	err := sdk.ServeLauncherHooks(ctx, *plugin, hook.New(hook.Options{Logger: log}),
		sdk.WithLogger(log), sdk.WithSocketRoot(*root), sdk.WithSocketName(*socketName), sdk.WithGracePeriod(*grace))
	if err != nil {
		log.Error(err, "sidecar failed")
		os.Exit(1)
	}
}
