// SPDX-License-Identifier: Apache-2.0

// Command cloudinit-network is a PreBoot sidecar that writes a cloud-init
// network-config built from the Pod's network-status annotation into the
// VM's NoCloud ISO. See README.md.
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
	"github.com/kubevirt-plugins/framework/sample-sidecars/cloudinit-network/cloudinitnetwork"
)

func main() {
	plugin := flag.String("plugin-name", "cloudinit-network", "Plugin name; the socket is <socket-root>/<plugin-name>/<socket-name>")
	root := flag.String("socket-root", sdk.DefaultSocketRoot, "directory holding the plugin socket directories")
	socketName := flag.String("socket-name", sdk.DefaultSocketName, "socket file name")
	statusFile := flag.String("network-status-file", "", "file holding the network-status annotation (a downward API volume item)")
	statusEnv := flag.String("network-status-env", "NETWORK_STATUS", "environment variable holding the network-status annotation")
	ipv4Prefix := flag.Int("ipv4-prefix", 24, "prefix length for IPv4 addresses given without one")
	ipv6Prefix := flag.Int("ipv6-prefix", 64, "prefix length for IPv6 addresses given without one")
	grace := flag.Duration("grace-period", sdk.DefaultGracePeriod, "how long calls in flight may finish after SIGTERM before they are cancelled")
	verbosity := flag.Int("v", 0, "log verbosity")
	flag.Parse()

	log := funcr.NewJSON(func(obj string) { fmt.Fprintln(os.Stderr, obj) }, funcr.Options{Verbosity: *verbosity})
	// The ISO writer stages files in the temporary directory; find out now
	// rather than at the first boot that it is missing (a FROM scratch image
	// has no /tmp: mount an emptyDir there).
	if dir, err := os.MkdirTemp("", "probe"); err != nil {
		log.Error(err, "no writable temporary directory; mount one at /tmp or set TMPDIR")
		os.Exit(1)
	} else {
		_ = os.Remove(dir)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	h := cloudinitnetwork.New(cloudinitnetwork.Options{
		StatusFile: *statusFile,
		StatusJSON: os.Getenv(*statusEnv),
		Prefixes:   cloudinitnetwork.Prefixes{IPv4: *ipv4Prefix, IPv6: *ipv6Prefix},
		Logger:     log,
	})
	err := sdk.ServeLauncherHooks(ctx, *plugin, h, sdk.WithLogger(log), sdk.WithSocketRoot(*root), sdk.WithSocketName(*socketName), sdk.WithGracePeriod(*grace))
	if err != nil {
		log.Error(err, "cloudinit-network failed")
		os.Exit(1)
	}
}
