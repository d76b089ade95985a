// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

// Resource is the Plugin resource the store watches.
func Resource() schema.GroupVersionResource {
	return pluginv1alpha1.GroupVersion.WithResource("plugins")
}

// Options configures a Store. One of Config or Client is required. The
// Plugin CRD must be installed for the store to become Ready; while the
// feature gate is off, snapshots do not wait for it.
type Options struct {
	// Config reaches the API server. Used when Client is nil.
	Config *rest.Config
	// Client lists and watches Plugins. Default: a dynamic client made
	// from Config.
	Client dynamic.Interface
	// FeatureGate reports whether the Plugins feature gate is on. It is
	// asked on every snapshot, so a gate the host flips at run time takes
	// effect at once. Default: the gate is on.
	FeatureGate func() bool
	// ResyncPeriod of the informer. Default 0: no periodic resync, the
	// watch alone keeps the store current.
	ResyncPeriod time.Duration
	// Logger receives informer events at V(4). Default: discard.
	Logger logr.Logger
}

// Snapshot is the set of Plugins at one moment.
type Snapshot struct {
	// Plugins sorted by name. They are shared between readers and must
	// not be modified.
	Plugins []*pluginv1alpha1.Plugin
	// Enabled is the feature gate at the time of the snapshot. When false,
	// Plugins is empty.
	Enabled bool
	// Revision changes whenever the stored Plugins change. Together with
	// Enabled it identifies the content of Plugins.
	Revision uint64
}

// ErrNotSynced is returned by Snapshot before the initial list completed.
var ErrNotSynced = errors.New("plugin store has not synced with the API server yet")

// Store is a name-sorted, informer-fed view of the Plugins.
type Store struct {
	gate     func() bool
	log      logr.Logger
	informer cache.SharedIndexInformer
	reg      cache.ResourceEventHandlerRegistration

	started atomic.Bool

	mu       sync.RWMutex
	plugins  []*pluginv1alpha1.Plugin
	revision uint64
}

// New creates a Store; call Run to start watching.
func New(opts Options) (*Store, error) {
	client := opts.Client
	if client == nil {
		if opts.Config == nil {
			return nil, errors.New("plugin store: one of Options.Config or Options.Client is required")
		}
		var err error
		if client, err = dynamic.NewForConfig(opts.Config); err != nil {
			return nil, fmt.Errorf("plugin store: creating the dynamic client: %w", err)
		}
	}
	gate := opts.FeatureGate
	if gate == nil {
		gate = func() bool { return true }
	}
	s := &Store{gate: gate, log: opts.Logger}
	if s.log.GetSink() == nil {
		s.log = logr.Discard()
	}
	s.informer = dynamicinformer.NewFilteredDynamicInformer(client, Resource(), "", opts.ResyncPeriod, cache.Indexers{}, nil).Informer()
	if err := s.informer.SetTransform(toPlugin); err != nil {
		return nil, fmt.Errorf("plugin store: %w", err)
	}
	reg, err := s.informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, _ bool) { s.changed("added", obj) },
		UpdateFunc: func(_, obj any) { s.changed("updated", obj) },
		DeleteFunc: func(obj any) { s.changed("deleted", obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("plugin store: %w", err)
	}
	s.reg = reg
	return s, nil
}

// toPlugin turns the informer's unstructured objects into typed Plugins
// without managedFields, before they are stored: nothing downstream reads
// managedFields, and dropping them early keeps the cache small.
func toPlugin(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		// Tombstones and objects already converted pass through.
		return obj, nil
	}
	p := &pluginv1alpha1.Plugin{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
		return nil, fmt.Errorf("converting Plugin %q: %w", u.GetName(), err)
	}
	p.ManagedFields = nil
	return p, nil
}

func (s *Store) changed(event string, obj any) {
	if p, ok := obj.(*pluginv1alpha1.Plugin); ok {
		s.log.V(4).Info("plugin changed", "event", event, "plugin", p.Name, "resourceVersion", p.ResourceVersion)
	}
	var plugins []*pluginv1alpha1.Plugin
	for _, o := range s.informer.GetStore().List() {
		if p, ok := o.(*pluginv1alpha1.Plugin); ok {
			plugins = append(plugins, p)
		}
	}
	slices.SortFunc(plugins, func(a, b *pluginv1alpha1.Plugin) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	s.mu.Lock()
	s.plugins = plugins
	s.revision++
	s.mu.Unlock()
}

// Run watches Plugins until ctx ends. It returns at once with an error
// when the store already runs.
func (s *Store) Run(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("plugin store: Run called twice")
	}
	s.informer.RunWithContext(ctx)
	return nil
}

// Ready reports whether the initial list of Plugins has been stored.
func (s *Store) Ready() bool {
	return s.reg.HasSynced()
}

// WaitForSync blocks until the store is Ready or ctx ends, and reports
// whether it is ready.
func (s *Store) WaitForSync(ctx context.Context) bool {
	return cache.WaitForCacheSync(ctx.Done(), s.reg.HasSynced)
}

// Snapshot returns the Plugins sorted by name, or nothing when the feature
// gate is off. Before the store is Ready it fails with ErrNotSynced when
// the gate is on: a partial list would skip hooks silently.
func (s *Store) Snapshot() (Snapshot, error) {
	if !s.gate() {
		s.mu.RLock()
		defer s.mu.RUnlock()
		return Snapshot{Enabled: false, Revision: s.revision}, nil
	}
	if !s.Ready() {
		return Snapshot{}, ErrNotSynced
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return Snapshot{Plugins: s.plugins, Enabled: true, Revision: s.revision}, nil
}
