// SPDX-License-Identifier: Apache-2.0

package vmi

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
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
const ControllerName = "labelsync-vmi-to-pod"

// DefaultMaxConcurrentReconciles is the number of workers when
// MaxConcurrentReconciles is not set. Every reconciler of the project (the
// Plugin reconciler of plugin-controller, the VM and VMI reconcilers of the
// label syncer) has this default and applies it the same way, in
// SetupWithManager: a reconcile mostly waits on the API server, and a few
// workers keep one slow object from holding up the others without loading
// the server.
const DefaultMaxConcurrentReconciles = 4

// ControllerUIDIndex is the cache index of Pods by the UID of their
// controller owner.
const ControllerUIDIndex = "labelsync.controllerUID"

// +kubebuilder:rbac:groups=kubevirt.io,resources=virtualmachineinstances,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler syncs VMI metadata to its launcher Pods.
type Reconciler struct {
	// Client reads VMIs and Pods (from the cache) and patches Pods.
	Client client.Client
	// APIReader reads a Pod again, uncached, after a refused patch.
	APIReader client.Reader
	// Rules selects the synced keys.
	Rules labelsync.Rules
	// Events records, on the VMI, the keys its Pods cannot take and the
	// patches that fail, aggregated; a routine sync records no event. Nil
	// records none.
	Events *syncevents.Recorder
	// Metrics records patches, conflicts and sync durations. Nil records
	// nothing.
	Metrics *syncmetrics.Metrics
	// MaxConcurrentReconciles is the number of workers. Default
	// DefaultMaxConcurrentReconciles.
	MaxConcurrentReconciles int
	// MaxPatchAttempts bounds the patches per Pod and sync. Default
	// apply.DefaultMaxAttempts.
	MaxPatchAttempts int

	// FullPodWatch watches and caches whole launcher Pods instead of their
	// metadata only. A deployment has no use for it: it exists so that a
	// benchmark can measure what the metadata-only watch saves (the
	// syncer's WithFullPodWatch). Default false.
	FullPodWatch bool
}

// SetupWithManager adds the Pod index and registers the controller: it runs
// for VMI creations and label or annotation changes, and for launcher Pod
// creations and label or annotation changes (a hand edit of a synced key
// on the Pod is put back). ctx bounds the set-up only (the index).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.MaxConcurrentReconciles <= 0 {
		r.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, r.podObject(), ControllerUIDIndex, controllerUID); err != nil {
		return fmt.Errorf("indexing Pods by controller UID: %w", err)
	}
	toVMI := handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &kubevirtv1.VirtualMachineInstance{}, handler.OnlyControllerOwner())
	metadataChanged := builder.WithPredicates(predicate.Or(predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&kubevirtv1.VirtualMachineInstance{}, metadataChanged).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles})
	if r.FullPodWatch {
		b = b.Watches(&corev1.Pod{}, toVMI, metadataChanged)
	} else {
		b = b.WatchesMetadata(&corev1.Pod{}, toVMI, metadataChanged)
	}
	return b.Complete(r)
}

// Reconcile syncs one VMI's launcher Pods.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logr.FromContextOrDiscard(ctx)
	vmi := &kubevirtv1.VirtualMachineInstance{}
	if err := r.Client.Get(ctx, req.NamespacedName, vmi); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if vmi.DeletionTimestamp != nil {
		// Being deleted: its Pods are on their way out; leave them as they
		// are, as the VM reconciler leaves the VMI.
		log.V(1).Info("VMI is being deleted, skipping its launcher Pods", "vmi", req.NamespacedName)
		return ctrl.Result{}, nil
	}
	pods, err := r.launcherPods(ctx, vmi)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("listing launcher Pods of VirtualMachineInstance %s: %w", req.NamespacedName, err)
	}
	source := labelsync.Metadata{Labels: vmi.Labels, Annotations: vmi.Annotations}
	plan := func(target labelsync.Metadata) labelsync.Change { return labelsync.Plan(r.Rules, source, target) }
	p := &apply.Patcher{Writer: r.Client, Reader: r.APIReader, Metrics: r.Metrics, Events: r.Events, Target: syncmetrics.TargetPod, MaxAttempts: r.MaxPatchAttempts}
	var errs []error
	for _, pod := range pods {
		start := time.Now()
		change, err := p.Apply(ctx, pod, plan)
		p.Report(log, vmi, pod, pod, change, err)
		switch {
		case err != nil:
			r.Metrics.Synced(syncmetrics.TargetPod, syncmetrics.ResultError, time.Since(start))
			errs = append(errs, fmt.Errorf("syncing launcher Pod %s of VirtualMachineInstance %s: %w", pod.Name, req.NamespacedName, err))
			continue
		case change.Empty():
			r.Metrics.Synced(syncmetrics.TargetPod, syncmetrics.ResultUnchanged, time.Since(start))
			continue
		}
		r.Metrics.Synced(syncmetrics.TargetPod, syncmetrics.ResultPatched, time.Since(start))
		desc := change.Describe()
		if desc == "" {
			desc = "bookkeeping of synced keys updated"
		}
		log.V(1).Info("synced launcher Pod metadata from the VMI", "vmi", req.NamespacedName, "pod", pod.Name, "change", desc)
	}
	return ctrl.Result{}, errors.Join(errs...)
}

// launcherPods returns the VMI's launcher Pods as metadata.
func (r *Reconciler) launcherPods(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) ([]*metav1.PartialObjectMetadata, error) {
	opts := []client.ListOption{
		client.InNamespace(vmi.Namespace),
		client.MatchingFields{ControllerUIDIndex: string(vmi.UID)},
		client.MatchingLabels{kubevirtv1.CreatedByLabel: string(vmi.UID)},
	}
	var metas []metav1.ObjectMeta
	if r.FullPodWatch {
		list := &corev1.PodList{}
		if err := r.Client.List(ctx, list, opts...); err != nil {
			return nil, err
		}
		for i := range list.Items {
			metas = append(metas, list.Items[i].ObjectMeta)
		}
	} else {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
		if err := r.Client.List(ctx, list, opts...); err != nil {
			return nil, err
		}
		for i := range list.Items {
			metas = append(metas, list.Items[i].ObjectMeta)
		}
	}
	var pods []*metav1.PartialObjectMetadata
	for _, m := range metas {
		// The index already requires the VMI as controller; check the
		// owner's kind as well, since a UID alone says nothing of it.
		owner := metav1.GetControllerOfNoCopy(&m)
		if owner == nil || owner.UID != vmi.UID || owner.Kind != "VirtualMachineInstance" {
			continue
		}
		pod := &metav1.PartialObjectMetadata{ObjectMeta: m}
		pod.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
		pods = append(pods, pod)
	}
	return pods, nil
}

func (r *Reconciler) podObject() client.Object {
	if r.FullPodWatch {
		return &corev1.Pod{}
	}
	pod := &metav1.PartialObjectMetadata{}
	pod.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
	return pod
}

// controllerUID indexes an object by the UID of its controller owner.
func controllerUID(obj client.Object) []string {
	owner := metav1.GetControllerOfNoCopy(obj)
	if owner == nil {
		return nil
	}
	return []string{string(owner.UID)}
}
