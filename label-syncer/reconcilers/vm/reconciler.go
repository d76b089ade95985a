// SPDX-License-Identifier: Apache-2.0

package vm

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/kubevirt-plugins/framework/label-syncer/internal/apply"
	"github.com/kubevirt-plugins/framework/label-syncer/labelsync"
	"github.com/kubevirt-plugins/framework/label-syncer/syncevents"
	"github.com/kubevirt-plugins/framework/label-syncer/syncmetrics"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "labelsync-vm-to-vmi"

// DefaultMaxConcurrentReconciles is the number of workers when
// MaxConcurrentReconciles is not set. Every reconciler of the project (the
// Plugin reconciler of plugin-controller, the VM and VMI reconcilers of the
// label syncer) has this default and applies it the same way, in
// SetupWithManager: a reconcile mostly waits on the API server, and a few
// workers keep one slow object from holding up the others without loading
// the server.
const DefaultMaxConcurrentReconciles = 4

// +kubebuilder:rbac:groups=kubevirt.io,resources=virtualmachines,verbs=get;list;watch
// +kubebuilder:rbac:groups=kubevirt.io,resources=virtualmachineinstances,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler syncs VM template metadata to the VMI.
type Reconciler struct {
	// Client reads VMs and VMIs (from the cache) and patches VMIs.
	Client client.Client
	// APIReader reads a VMI again, uncached, after a refused patch.
	APIReader client.Reader
	// Rules selects the synced keys.
	Rules labelsync.Rules
	// Events records, on the VMI, the keys it cannot take and the patches
	// that fail, aggregated; a routine sync records no event. Nil records
	// none.
	Events *syncevents.Recorder
	// Metrics records patches, conflicts and sync durations. Nil records
	// nothing.
	Metrics *syncmetrics.Metrics
	// MaxConcurrentReconciles is the number of workers. Default
	// DefaultMaxConcurrentReconciles.
	MaxConcurrentReconciles int
	// MaxPatchAttempts bounds the patches per sync. Default
	// apply.DefaultMaxAttempts.
	MaxPatchAttempts int
}

// SetupWithManager registers the controller: it runs for VM creations and
// spec changes, and for VMI creations and label or annotation changes (a
// hand edit of a synced key on the VMI is put back). ctx bounds the set-up
// only.
func (r *Reconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager) error {
	if r.MaxConcurrentReconciles <= 0 {
		r.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&kubevirtv1.VirtualMachine{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&kubevirtv1.VirtualMachineInstance{}, &handler.EnqueueRequestForObject{},
			builder.WithPredicates(predicate.Or(predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Complete(r)
}

// Reconcile syncs one VM's VMI.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	start := time.Now()
	log := logr.FromContextOrDiscard(ctx)
	vm := &kubevirtv1.VirtualMachine{}
	if err := r.Client.Get(ctx, req.NamespacedName, vm); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if vm.Spec.Template == nil {
		return ctrl.Result{}, nil
	}
	vmi := &kubevirtv1.VirtualMachineInstance{}
	if err := r.Client.Get(ctx, req.NamespacedName, vmi); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if vmi.DeletionTimestamp != nil {
		// Being deleted: as virt-controller, leave it (and so its Pod) as
		// it is; its finalizers are someone else's business.
		log.V(1).Info("VMI is being deleted, skipping", "vmi", req.NamespacedName)
		return ctrl.Result{}, nil
	}
	if owner := metav1.GetControllerOf(vmi); owner != nil && owner.UID != vm.UID {
		// A VMI of the same name this VM does not control: not ours to edit.
		log.V(1).Info("VMI controlled by another object, skipping", "owner", owner.Name, "ownerKind", owner.Kind)
		return ctrl.Result{}, nil
	}
	source := labelsync.Metadata{Labels: vm.Spec.Template.ObjectMeta.Labels, Annotations: vm.Spec.Template.ObjectMeta.Annotations}
	p := &apply.Patcher{Writer: r.Client, Reader: r.APIReader, Metrics: r.Metrics, Events: r.Events, Target: syncmetrics.TargetVMI, MaxAttempts: r.MaxPatchAttempts}
	change, err := p.Apply(ctx, vmi, func(target labelsync.Metadata) labelsync.Change {
		return labelsync.Plan(r.Rules, source, target)
	})
	p.Report(log, vmi, vm, vmi, change, err)
	if err != nil {
		r.Metrics.Synced(syncmetrics.TargetVMI, syncmetrics.ResultError, time.Since(start))
		return ctrl.Result{}, fmt.Errorf("syncing VirtualMachineInstance %s from the template of VirtualMachine %s: %w", req.NamespacedName, vm.Name, err)
	}
	if change.Empty() {
		r.Metrics.Synced(syncmetrics.TargetVMI, syncmetrics.ResultUnchanged, time.Since(start))
		return ctrl.Result{}, nil
	}
	r.Metrics.Synced(syncmetrics.TargetVMI, syncmetrics.ResultPatched, time.Since(start))
	desc := change.Describe()
	if desc == "" {
		desc = "bookkeeping of synced keys updated"
	}
	log.V(1).Info("synced VMI metadata from the VM template", "vmi", req.NamespacedName, "change", desc)
	return ctrl.Result{}, nil
}
