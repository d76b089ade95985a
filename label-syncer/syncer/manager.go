// SPDX-License-Identifier: Apache-2.0

package syncer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kubevirt-plugins/framework/label-syncer/keyfilter"
	"github.com/kubevirt-plugins/framework/label-syncer/labelsync"
	"github.com/kubevirt-plugins/framework/label-syncer/reconcilers/vm"
	"github.com/kubevirt-plugins/framework/label-syncer/reconcilers/vmi"
	"github.com/kubevirt-plugins/framework/label-syncer/syncevents"
	"github.com/kubevirt-plugins/framework/label-syncer/syncmetrics"
)

// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=kubevirt
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch,namespace=kubevirt

// NewManager returns a manager running both reconcilers, not yet started.
// ctx bounds the set-up only (the Pod index registration). mopts are for
// tests and benchmarks (WithFullPodWatch, WithoutControllerNameValidation);
// a deployment passes none.
func NewManager(ctx context.Context, cfg *rest.Config, opts Options, mopts ...ManagerOption) (ctrl.Manager, error) {
	opts = withDefaults(opts)
	mc := newManagerConfig(mopts)
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, kubevirtv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("building the scheme: %w", err)
		}
	}
	m, err := syncmetrics.New(opts.Registerer)
	if err != nil {
		return nil, err
	}
	mgrOpts, err := managerOptions(scheme, opts, mc)
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	annotations := opts.Annotations
	if !opts.NoDeschedulerSync {
		annotations = annotations.WithBuiltin(keyfilter.DeschedulerAnnotations()...)
	}
	rules := labelsync.Rules{Labels: opts.Labels, Annotations: annotations, Prune: opts.PruneUnconfigured}
	// One recorder for both reconcilers: its bound holds for the syncer.
	events := syncevents.New(mgr.GetEventRecorder("label-syncer"), syncevents.Options{})
	vmR := &vm.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Rules: rules, Events: events, Metrics: m,
		MaxConcurrentReconciles: opts.MaxConcurrentReconciles, MaxPatchAttempts: opts.MaxPatchAttempts,
	}
	if err := vmR.SetupWithManager(ctx, mgr); err != nil {
		return nil, fmt.Errorf("setting up %s: %w", vm.ControllerName, err)
	}
	vmiR := &vmi.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Rules: rules, Events: events, Metrics: m,
		MaxConcurrentReconciles: opts.MaxConcurrentReconciles, MaxPatchAttempts: opts.MaxPatchAttempts,
		FullPodWatch: mc.fullPodWatch,
	}
	if err := vmiR.SetupWithManager(ctx, mgr); err != nil {
		return nil, fmt.Errorf("setting up %s: %w", vmi.ControllerName, err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("caches", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return errors.New("caches not synced")
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if mc.fullPodWatch {
		opts.Logger.Info("watching whole launcher Pods, not their metadata only (WithFullPodWatch)")
	}
	logEntries(opts.Logger, "label", opts.Labels)
	logEntries(opts.Logger, "annotation", annotations)
	// Last, so that a reader of the log who sees this line has seen every
	// entry above it.
	opts.Logger.Info("label syncer configured",
		"labels", opts.Labels.String(), "annotations", annotations.String(),
		"deschedulerAnnotations", !opts.NoDeschedulerSync,
		"pruneUnconfigured", opts.PruneUnconfigured)
	return mgr, nil
}

// managerOptions are the options of the syncer's manager.
func managerOptions(scheme *runtime.Scheme, opts Options, mc managerConfig) (ctrl.Options, error) {
	launcherPods, err := labels.NewRequirement(kubevirtv1.CreatedByLabel, selection.Exists, nil)
	if err != nil {
		return ctrl.Options{}, err
	}
	metricsAddr := opts.MetricsBindAddress
	if metricsAddr == "" {
		metricsAddr = "0"
	}
	var namespaces map[string]cache.Config
	for _, ns := range opts.Namespaces {
		if namespaces == nil {
			namespaces = map[string]cache.Config{}
		}
		namespaces[ns] = cache.Config{}
	}
	return ctrl.Options{
		Scheme: scheme,
		Logger: opts.Logger,
		Cache: cache.Options{
			DefaultNamespaces: namespaces,
			DefaultTransform:  cache.TransformStripManagedFields(),
			ByObject: map[client.Object]cache.ByObject{
				// Only Pods that can be launcher Pods: the reconciler finds
				// them by this label, so no other Pod is worth holding.
				&corev1.Pod{}: {
					Label:     labels.NewSelector().Add(*launcherPods),
					Transform: cache.TransformStripManagedFields(),
				},
				&kubevirtv1.VirtualMachine{}:         {Transform: keepVMTemplateMetadata},
				&kubevirtv1.VirtualMachineInstance{}: {Transform: keepVMIMetadata},
			},
		},
		LeaderElection:                opts.LeaderElection,
		LeaderElectionID:              opts.LeaderElectionID,
		LeaderElectionNamespace:       opts.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		Metrics:                       metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress:        opts.HealthProbeBindAddress,
		// Controller names are unique within one manager; only tests run
		// several managers in one process (WithoutControllerNameValidation).
		Controller: controllerConfig(mc),
	}, nil
}

func controllerConfig(mc managerConfig) config.Controller {
	var c config.Controller
	if mc.skipNameValidation {
		c.SkipNameValidation = new(true)
	}
	return c
}

// logEntries logs one line per admitted entry, saying what it matches and,
// for an entry in an owned domain, which allowance admitted it.
func logEntries(log logr.Logger, kind string, f *keyfilter.Filter) {
	for _, e := range f.Admitted() {
		kv := []any{"kind", kind, "entry", e.Text}
		if e.Prefix {
			kv = append(kv, "matches", "keys starting with "+strings.TrimSuffix(e.Text, "*"))
		} else {
			kv = append(kv, "matches", "the key "+e.Text)
		}
		switch {
		case e.Builtin:
			kv = append(kv, "source", "built in, as virt-controller; "+keyfilter.DeschedulerAnnotationsFlag+"=false turns it off")
		case e.AllowedOwned != "":
			kv = append(kv, "source", "configured", "ownedDomainAllowed", e.AllowedOwned)
		default:
			kv = append(kv, "source", "configured")
		}
		log.Info("sync entry admitted", kv...)
	}
}

func withDefaults(o Options) Options {
	if o.Logger.GetSink() == nil {
		o.Logger = logr.Discard()
	}
	if o.Registerer == nil {
		o.Registerer = metrics.Registry
	}
	if o.LeaderElectionID == "" {
		o.LeaderElectionID = DefaultLeaderElectionID
	}
	return o
}

// keepVMTemplateMetadata reduces a cached VM to what the VM reconciler
// reads: its metadata and the template's metadata. The syncer never writes
// VMs, so nothing is lost.
func keepVMTemplateMetadata(obj any) (any, error) {
	v, ok := obj.(*kubevirtv1.VirtualMachine)
	if !ok {
		return obj, nil
	}
	out := &kubevirtv1.VirtualMachine{TypeMeta: v.TypeMeta, ObjectMeta: v.ObjectMeta}
	out.ManagedFields = nil
	if v.Spec.Template != nil {
		out.Spec.Template = &kubevirtv1.VirtualMachineInstanceTemplateSpec{ObjectMeta: metav1.ObjectMeta{
			Labels: v.Spec.Template.ObjectMeta.Labels, Annotations: v.Spec.Template.ObjectMeta.Annotations,
		}}
	}
	return out, nil
}

// keepVMIMetadata reduces a cached VMI to its metadata, all both
// reconcilers read. VMIs are only ever written with metadata patches.
func keepVMIMetadata(obj any) (any, error) {
	v, ok := obj.(*kubevirtv1.VirtualMachineInstance)
	if !ok {
		return obj, nil
	}
	out := &kubevirtv1.VirtualMachineInstance{TypeMeta: v.TypeMeta, ObjectMeta: v.ObjectMeta}
	out.ManagedFields = nil
	return out, nil
}

var _ toolscache.TransformFunc = keepVMTemplateMetadata
