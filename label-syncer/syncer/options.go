// SPDX-License-Identifier: Apache-2.0

package syncer

import (
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubevirt-plugins/framework/label-syncer/keyfilter"
	"github.com/kubevirt-plugins/framework/label-syncer/reconcilers/vm"
)

// Defaults of Options.
const (
	DefaultLeaderElectionID = "label-syncer.kubevirt-plugins.io"
	// DefaultMaxConcurrentReconciles is the reconcilers' own default
	// (vm.DefaultMaxConcurrentReconciles, which every reconciler of the
	// project shares).
	DefaultMaxConcurrentReconciles = vm.DefaultMaxConcurrentReconciles
)

// Options configures NewManager. The zero value is a syncer that syncs the
// descheduler's eviction annotations only (as virt-controller does); set
// Labels and/or Annotations for more.
type Options struct {
	// Labels selects the synced labels (--additional-launcher-labels-sync).
	// Nil syncs no label.
	Labels *keyfilter.Filter
	// Annotations selects the synced annotations
	// (--additional-launcher-annotations-sync). Nil syncs no annotation.
	Annotations *keyfilter.Filter
	// NoDeschedulerSync turns off the built-in sync of
	// keyfilter.DeschedulerAnnotations (--sync-descheduler-annotations=false).
	// Default false: they follow the template whatever Annotations says, as
	// virt-controller carries them.
	NoDeschedulerSync bool
	// PruneUnconfigured records the synced keys on every target and removes
	// recorded keys that no entry matches any more. Default false.
	PruneUnconfigured bool

	// Logger is the manager's and the reconcilers' logger. Default
	// logr.Discard().
	Logger logr.Logger
	// Registerer receives the syncer's metrics. Default: the
	// controller-runtime registry, which the manager's metrics endpoint
	// serves.
	Registerer prometheus.Registerer

	// LeaderElection makes only one replica sync at a time. Default false.
	LeaderElection bool
	// LeaderElectionID names the Lease. Default DefaultLeaderElectionID.
	LeaderElectionID string
	// LeaderElectionNamespace holds the Lease. Default: the namespace the
	// Pod runs in.
	LeaderElectionNamespace string
	// MetricsBindAddress is where /metrics is served, e.g. ":8080".
	// Default "": not served.
	MetricsBindAddress string
	// HealthProbeBindAddress is where /healthz and /readyz are served, e.g.
	// ":8081". Default "": not served.
	HealthProbeBindAddress string

	// Namespaces limits the syncer to these namespaces. Default: all.
	Namespaces []string

	// MaxConcurrentReconciles is the number of workers of each reconciler.
	// Default DefaultMaxConcurrentReconciles, which the reconcilers apply.
	MaxConcurrentReconciles int
	// MaxPatchAttempts bounds the patches per target and sync when other
	// writers keep changing the target. Default 5.
	MaxPatchAttempts int
}
