// SPDX-License-Identifier: Apache-2.0

// Command smbios-watchdog is a GuestDefinition sidecar that sets SMBIOS
// system information and an i6300esb watchdog from VMI labels. See
// README.md.
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
	"github.com/kubevirt-plugins/framework/sample-sidecars/smbios-watchdog/smbioswatchdog"
)

func main() {
	plugin := flag.String("plugin-name", "smbios-watchdog", "Plugin name; the socket is <socket-root>/<plugin-name>/<socket-name>")
	root := flag.String("socket-root", sdk.DefaultSocketRoot, "directory holding the plugin socket directories")
	socketName := flag.String("socket-name", sdk.DefaultSocketName, "socket file name")
	smbiosPrefix := flag.String("smbios-label-prefix", smbioswatchdog.DefaultSMBIOSLabelPrefix, "prefix of the VMI labels that set SMBIOS system entries")
	watchdogLabel := flag.String("watchdog-label", smbioswatchdog.DefaultWatchdogLabel, "VMI label holding the watchdog action")
	grace := flag.Duration("grace-period", sdk.DefaultGracePeriod, "how long calls in flight may finish after SIGTERM before they are cancelled")
	verbosity := flag.Int("v", 0, "log verbosity")
	flag.Parse()

	log := funcr.NewJSON(func(obj string) { fmt.Fprintln(os.Stderr, obj) }, funcr.Options{Verbosity: *verbosity})
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	h := smbioswatchdog.New(smbioswatchdog.Options{SMBIOSLabelPrefix: *smbiosPrefix, WatchdogLabel: *watchdogLabel})
	err := sdk.ServeLauncherHooks(ctx, *plugin, h,
		sdk.WithLogger(log), sdk.WithSocketRoot(*root), sdk.WithSocketName(*socketName), sdk.WithGracePeriod(*grace))
	if err != nil {
		log.Error(err, "smbios-watchdog failed")
		os.Exit(1)
	}
}
