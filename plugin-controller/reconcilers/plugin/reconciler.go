// SPDX-License-Identifier: Apache-2.0

package plugin

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kubevirt-plugins/framework/api/celenv"
	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
	"github.com/kubevirt-plugins/framework/api/plugin/v1alpha1/validation"
)

// +kubebuilder:rbac:groups=plugin.kubevirt.io,resources=plugins,verbs=get;list;watch
// +kubebuilder:rbac:groups=plugin.kubevirt.io,resources=plugins/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingadmissionpolicies;validatingadmissionpolicies;mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// ControllerName names the controller in logs, metrics and Events.
const ControllerName = "plugin-controller"

// DefaultMaxConcurrentReconciles is the number of workers when
// MaxConcurrentReconciles is not set. Every reconciler of the project (the
// Plugin reconciler of plugin-controller, the VM and VMI reconcilers of the
// label syncer) has this default and applies it the same way, in
// SetupWithManager: a reconcile mostly waits on the API server, and a few
// workers keep one slow object from holding up the others without loading
// the server.
const DefaultMaxConcurrentReconciles = 4

// Reconciler writes the status of Plugins.
type Reconciler struct {
	// Client reads Plugins and admission objects (from the manager's
	// cache) and writes Plugin status. Required.
	Client client.Client
	// CEL is the environment the launcher and the handler compile
	// expressions with; its cost limit applies. Required.
	CEL *celenv.Env
	// Recorder emits an Event each time a condition changes status.
	// Default: the manager's recorder named ControllerName.
	Recorder events.EventRecorder
	// Clock stamps condition transitions. Default: the real clock.
	Clock clock.PassiveClock
	// MaxConcurrentReconciles is the number of workers. Default
	// DefaultMaxConcurrentReconciles.
	MaxConcurrentReconciles int
	// Discovery tells which admission kinds the API server serves: only
	// those are watched, and a reference to another kind is reported as
	// not served. Default: a discovery client for the manager's config.
	Discovery ResourceDiscovery
	// RediscoveryInterval is how often Discovery is asked again, so that a
	// kind the server starts serving (after an upgrade) is watched without
	// a restart. Default: one minute.
	RediscoveryInterval time.Duration

	// served is nil until SetupWithManager runs; Reconcile then treats
	// every kind as served.
	served *servedKinds
}

// SetupWithManager registers the field index on referenced admission
// objects and the controller with its watches.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.CEL == nil {
		return fmt.Errorf("plugin reconciler: a CEL environment is required")
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder(ControllerName)
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.MaxConcurrentReconciles <= 0 {
		r.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &pluginv1alpha1.Plugin{}, referencesIndex, indexReferences); err != nil {
		return fmt.Errorf("plugin reconciler: indexing %s: %w", referencesIndex, err)
	}
	if r.Discovery == nil {
		dc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
		if err != nil {
			return fmt.Errorf("plugin reconciler: %w", err)
		}
		r.Discovery = dc
	}
	if r.RediscoveryInterval <= 0 {
		r.RediscoveryInterval = time.Minute
	}
	served, err := discoverServedKinds(r.Discovery)
	if err != nil {
		return fmt.Errorf("plugin reconciler: %w", err)
	}
	r.served = &servedKinds{}
	r.served.set(served)

	requeue := make(chan event.GenericEvent)
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		// Own status writes do not change the generation and need no
		// reconcile; spec edits do.
		For(&pluginv1alpha1.Plugin{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Channel(requeue, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Build(r)
	if err != nil {
		return err
	}
	watch := func(kind string) error {
		k := kindNamed(kind)
		obj := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: k.gvk.GroupVersion().String(), Kind: k.gvk.Kind}}
		// Only existence matters, so metadata is enough and updates are noise.
		existence := predicate.Funcs{
			UpdateFunc:  func(event.UpdateEvent) bool { return false },
			GenericFunc: func(event.GenericEvent) bool { return false },
		}
		return c.Watch(source.Kind[client.Object](mgr.GetCache(), obj,
			handler.EnqueueRequestsFromMapFunc(r.referencingPlugins(kind)), existence))
	}
	var unserved []string
	for _, k := range referenceKinds() {
		if !served[k.gvk.Kind] {
			unserved = append(unserved, k.gvk.Kind)
			continue
		}
		if err := watch(k.gvk.Kind); err != nil {
			return fmt.Errorf("plugin reconciler: watching %s: %w", k.gvk.Kind, err)
		}
	}
	if len(unserved) > 0 {
		mgr.GetLogger().Info("admission kinds the API server does not serve; Plugins referencing them report AdmissionReferencesResolved=False until it does",
			"groupVersion", admissionGroupVersion.String(), "kinds", unserved)
	}
	return mgr.Add(&rediscovery{
		discovery: r.Discovery,
		kinds:     r.served,
		interval:  r.RediscoveryInterval,
		onChange: func(ctx context.Context, added, removed []string) {
			for _, kind := range added {
				if err := watch(kind); err != nil {
					log.FromContext(ctx).Error(err, "watching a newly served admission kind", "kind", kind)
				}
			}
			r.requeueReferencing(ctx, requeue, append(added, removed...))
		},
	})
}

// requeueReferencing queues every Plugin that references one of kinds.
func (r *Reconciler) requeueReferencing(ctx context.Context, requeue chan<- event.GenericEvent, kinds []string) {
	var list pluginv1alpha1.PluginList
	if err := r.Client.List(ctx, &list); err != nil {
		log.FromContext(ctx).Error(err, "listing plugins to requeue after a discovery change")
		return
	}
	for i := range list.Items {
		p := &list.Items[i]
		if !slices.ContainsFunc(references(&p.Spec), func(ref reference) bool { return slices.Contains(kinds, ref.Kind) }) {
			continue
		}
		select {
		case requeue <- event.GenericEvent{Object: p}:
		case <-ctx.Done():
			return
		}
	}
}

// referencingPlugins maps an admission object to the Plugins naming it.
func (r *Reconciler) referencingPlugins(kind string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var list pluginv1alpha1.PluginList
		key := reference{Kind: kind, Name: obj.GetName()}.indexKey()
		if err := r.Client.List(ctx, &list, client.MatchingFields{referencesIndex: key}); err != nil {
			log.FromContext(ctx).Error(err, "listing plugins referencing admission object", "kind", kind, "name", obj.GetName())
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(list.Items))
		for _, p := range list.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)})
		}
		return reqs
	}
}

// Reconcile brings one Plugin's status up to date. It writes only when
// the status changes and emits Events for the conditions that changed.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var p pluginv1alpha1.Plugin
	if err := r.Client.Get(ctx, req.NamespacedName, &p); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	obs := observation{celErrors: validation.CEL(&p, r.CEL)}
	missing, unserved, err := r.resolveReferences(ctx, &p.Spec)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("plugin %s: %w", p.Name, err)
	}
	obs.missing, obs.unserved = missing, unserved

	status := desiredStatus(&p, obs, metav1.NewTime(r.Clock.Now()))
	if equality.Semantic.DeepEqual(p.Status, status) {
		return reconcile.Result{}, nil
	}
	previous := p.Status.Conditions
	p.Status = status
	if err := r.Client.Status().Update(ctx, &p); err != nil {
		// A conflict is retried with the rate limiter's backoff, like any
		// other error: status-only changes do not come back through the watch.
		return reconcile.Result{}, fmt.Errorf("plugin %s: updating status: %w", p.Name, err)
	}
	for _, t := range transitions(previous, status.Conditions) {
		eventType := corev1.EventTypeNormal
		if t.condition.Status != metav1.ConditionTrue {
			eventType = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(&p, nil, eventType, t.condition.Reason, "Reconcile", "%s is %s: %s",
			t.condition.Type, t.condition.Status, t.condition.Message)
	}
	log.FromContext(ctx).V(1).Info("status updated", "plugin", p.Name, "generation", p.Generation,
		"invalidExpressions", len(obs.celErrors), "missingReferences", len(obs.missing), "unservedReferences", len(obs.unserved))
	return reconcile.Result{}, nil
}

// resolveReferences looks each referenced admission object of a served
// kind up in the metadata cache; references to kinds the server does not
// serve are returned apart.
func (r *Reconciler) resolveReferences(ctx context.Context, spec *pluginv1alpha1.PluginSpec) (missing, unserved []reference, err error) {
	for _, ref := range references(spec) {
		if r.served != nil && !r.served.has(ref.Kind) {
			unserved = append(unserved, ref)
			continue
		}
		gvk := kindNamed(ref.Kind).gvk
		obj := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}}
		err := r.Client.Get(ctx, client.ObjectKey{Name: ref.Name}, obj)
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, ref)
		case err != nil:
			return nil, nil, fmt.Errorf("looking up %s: %w", ref, err)
		}
	}
	return missing, unserved, nil
}
