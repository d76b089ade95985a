// SPDX-License-Identifier: Apache-2.0

// Command label-syncer syncs selected labels and annotations from each
// VirtualMachine's spec.template.metadata to its VirtualMachineInstance, and
// from the VMI to its running virt-launcher Pod, in place.
//
// Usage:
//
//	label-syncer --additional-launcher-labels-sync='ops.example.com/*' \
//	  [--additional-launcher-annotations-sync=...] [--prune-unconfigured] \
//	  [--allow-owned-domains=...] [--sync-descheduler-annotations=false] \
//	  [--kubeconfig=...] [--leader-elect] \
//	  [--metrics-bind-address=:8443] [--metrics-secure=true] [--metrics-cert-dir=...]
//	  [--health-probe-bind-address=:8081]
//
// An invalid entry makes it exit with status 2 and a message naming it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kubevirt-plugins/framework/label-syncer/keyfilter"
	"github.com/kubevirt-plugins/framework/label-syncer/syncer"
)

// The metrics endpoint asks the API server who a scraper is and whether it
// may get /metrics.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// errUsage marks errors in the command line (exit status 2).
var errUsage = errors.New("usage")

func main() {
	err := run(ctrl.SetupSignalHandler(), os.Args[1:], os.Stderr)
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		fmt.Fprintf(os.Stderr, "label-syncer: %v\n", err)
		os.Exit(2)
	default:
		fmt.Fprintf(os.Stderr, "label-syncer: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("label-syncer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		labelsList      = fs.String("additional-launcher-labels-sync", "", "Comma separated label keys, or prefixes ending in '*', synced from the VM template to the VMI and its launcher Pod.")
		annotationsList = fs.String("additional-launcher-annotations-sync", "", "Comma separated annotation keys, or prefixes ending in '*', synced the same way.")
		allowOwned      = fs.String("allow-owned-domains", "", "Comma separated domains inside kubevirt.io, kubernetes.io or k8s.io (each with its subdomains) whose keys entries may cover anyway. Default: none.")
		descheduler     = fs.Bool("sync-descheduler-annotations", true, "Sync the annotations descheduler.alpha.kubernetes.io/evict and .../prefer-no-eviction without an entry, as virt-controller does.")
		prune           = fs.Bool("prune-unconfigured", false, "Record synced keys on each target and, after an entry is removed from the configuration, remove the keys it had synced.")
		kubeconfig      = fs.String("kubeconfig", "", "Path to a kubeconfig. Default: $KUBECONFIG, else the in-cluster configuration.")
		leaderElect     = fs.Bool("leader-elect", false, "Elect a leader so only one replica syncs at a time.")
		leaderNamespace = fs.String("leader-election-namespace", "", "Namespace of the leader election Lease. Default: the Pod's namespace.")
		metricsAddr     = fs.String("metrics-bind-address", ":8443", "Address of the metrics endpoint; '0' disables it.")
		metricsSecure   = fs.Bool("metrics-secure", true, "Serve metrics over HTTPS to clients whose bearer token the API server authenticates (TokenReview) and authorizes for GET /metrics (SubjectAccessReview); false serves plain HTTP to anyone.")
		metricsCertDir  = fs.String("metrics-cert-dir", "", "Directory holding tls.crt and tls.key for the metrics endpoint, reloaded when they change. Default: a self-signed certificate made at start-up.")
		probeAddr       = fs.String("health-probe-bind-address", ":8081", "Address of /healthz and /readyz; '0' disables them.")
		workers         = fs.Int("concurrent-syncs", syncer.DefaultMaxConcurrentReconciles, "Workers per reconciler.")
	)
	zapOpts := zap.Options{}
	zapOpts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	// Reject the configuration before touching the cluster.
	guard, err := keyfilter.ParseGuard(*allowOwned)
	if err != nil {
		return fmt.Errorf("%w: --allow-owned-domains: %w", errUsage, err)
	}
	labels, err := guard.Parse(*labelsList)
	if err != nil {
		return fmt.Errorf("%w: --additional-launcher-labels-sync: %w", errUsage, err)
	}
	annotations, err := guard.Parse(*annotationsList)
	if err != nil {
		return fmt.Errorf("%w: --additional-launcher-annotations-sync: %w", errUsage, err)
	}
	if *probeAddr == "0" {
		*probeAddr = ""
	}

	log := zap.New(zap.UseFlagOptions(&zapOpts))
	ctrl.SetLogger(log)
	cfg, err := restConfig(*kubeconfig)
	if err != nil {
		return fmt.Errorf("loading the cluster configuration: %w", err)
	}
	mgr, err := syncer.NewManager(ctx, cfg, syncer.Options{
		Labels:                  labels,
		Annotations:             annotations,
		PruneUnconfigured:       *prune,
		NoDeschedulerSync:       !*descheduler,
		Logger:                  log,
		LeaderElection:          *leaderElect,
		LeaderElectionNamespace: *leaderNamespace,
		// Served below, where HTTPS and the API server's authentication
		// and authorization are set up.
		MetricsBindAddress:      "0",
		HealthProbeBindAddress:  *probeAddr,
		MaxConcurrentReconciles: *workers,
	})
	if err != nil {
		return err
	}
	if *metricsAddr != "0" && *metricsAddr != "" {
		httpClient, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return err
		}
		srv, err := metricsserver.NewServer(metricsOptions(*metricsAddr, *metricsSecure, *metricsCertDir), cfg, httpClient)
		if err != nil {
			return fmt.Errorf("setting up the metrics endpoint: %w", err)
		}
		if err := mgr.Add(srv); err != nil {
			return err
		}
	}
	return mgr.Start(ctx)
}

// metricsOptions serves the controller-runtime registry (where the syncer
// registers its metrics by default) the way --metrics-secure says.
func metricsOptions(addr string, secure bool, certDir string) metricsserver.Options {
	opts := metricsserver.Options{BindAddress: addr}
	if secure {
		opts.SecureServing = true
		opts.CertDir = certDir
		opts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return opts
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		return ctrlconfig.GetConfig()
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	// Rely on the server's priority and fairness, as controller-runtime
	// does for the configurations it loads itself.
	cfg.QPS = -1
	return cfg, nil
}
