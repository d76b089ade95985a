package plugin

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	// MaxConcurrentReconciles bounds parallel reconciles. Default: 4.
	MaxConcurrentReconciles int
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
		r.MaxConcurrentReconciles = 4
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &pluginv1alpha1.Plugin{}, referencesIndex, indexReferences); err != nil {
		return fmt.Errorf("plugin reconciler: indexing %s: %w", referencesIndex, err)
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		// Own status writes do not change the generation and need no
		// reconcile; spec edits do.
		For(&pluginv1alpha1.Plugin{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles})
	// Only existence matters, so metadata is enough and updates are noise.
	existence := predicate.Funcs{
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	for _, k := range referenceKinds() {
		b = b.WatchesMetadata(k.obj, handler.EnqueueRequestsFromMapFunc(r.referencingPlugins(k.gvk.Kind)),
			builder.WithPredicates(existence))
	}
	return b.Complete(r)
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
	missing, err := r.missingReferences(ctx, &p.Spec)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("plugin %s: %w", p.Name, err)
	}
	obs.missing = missing

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
		"invalidExpressions", len(obs.celErrors), "missingReferences", len(obs.missing))
	return reconcile.Result{}, nil
}

// missingReferences looks each referenced admission object up in the
// metadata cache.
func (r *Reconciler) missingReferences(ctx context.Context, spec *pluginv1alpha1.PluginSpec) ([]reference, error) {
	var missing []reference
	gvks := map[string]metav1.TypeMeta{}
	for _, k := range referenceKinds() {
		gvks[k.gvk.Kind] = metav1.TypeMeta{APIVersion: k.gvk.GroupVersion().String(), Kind: k.gvk.Kind}
	}
	for _, ref := range references(spec) {
		obj := &metav1.PartialObjectMetadata{TypeMeta: gvks[ref.Kind]}
		err := r.Client.Get(ctx, client.ObjectKey{Name: ref.Name}, obj)
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, ref)
		case err != nil:
			return nil, fmt.Errorf("looking up %s: %w", ref, err)
		}
	}
	return missing, nil
}
