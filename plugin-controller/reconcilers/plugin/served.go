// SPDX-License-Identifier: Apache-2.0

package plugin

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// ResourceDiscovery is the part of client-go's discovery client the
// reconciler uses; *discovery.DiscoveryClient implements it.
type ResourceDiscovery interface {
	ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error)
}

// servedKinds is the set of admission kinds the API server serves, as
// last discovered. The reconciler looks objects of served kinds up in the
// cache and reports references to the others as not served: a cache read
// of a kind the server does not serve would wait for an informer that
// never syncs.
type servedKinds struct {
	mu     sync.RWMutex
	served map[string]bool
}

func (s *servedKinds) has(kind string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.served[kind]
}

// set replaces the set and returns the kinds that were added.
func (s *servedKinds) set(now map[string]bool) (added []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range referenceKinds() {
		if now[k.gvk.Kind] && !s.served[k.gvk.Kind] {
			added = append(added, k.gvk.Kind)
		}
	}
	s.served = now
	return added
}

// discoverServedKinds asks the API server which of the reference kinds its
// admissionregistration.k8s.io/v1 serves. A group version the server does
// not serve at all means none of them.
func discoverServedKinds(dc ResourceDiscovery) (map[string]bool, error) {
	gv := admissionGroupVersion.String()
	list, err := dc.ServerResourcesForGroupVersion(gv)
	if apierrors.IsNotFound(err) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("discovering the resources of %s: %w", gv, err)
	}
	served := map[string]bool{}
	for _, res := range list.APIResources {
		if slices.ContainsFunc(referenceKinds(), func(k referenceKind) bool { return k.gvk.Kind == res.Kind }) &&
			slices.Contains(res.Verbs, "watch") && slices.Contains(res.Verbs, "list") {
			served[res.Kind] = true
		}
	}
	return served, nil
}

// rediscovery re-reads the served kinds every interval and hands the
// changes to onChange, so that a cluster upgraded to a version serving a
// kind is picked up without a restart. It runs on the leader, like the
// controller whose watches it adds.
type rediscovery struct {
	discovery ResourceDiscovery
	kinds     *servedKinds
	interval  time.Duration
	// onChange gets the kinds the server started and stopped serving.
	onChange func(ctx context.Context, added, removed []string)
}

func (r *rediscovery) NeedLeaderElection() bool { return true }

func (r *rediscovery) Start(ctx context.Context) error {
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			r.once(ctx)
		}
	}
}

// once runs one discovery. An error is logged and the set is kept until
// the next interval.
func (r *rediscovery) once(ctx context.Context) {
	logger := log.FromContext(ctx).WithName("discovery")
	now, err := discoverServedKinds(r.discovery)
	if err != nil {
		logger.Error(err, "re-discovery of the served admission kinds failed; keeping the previous set")
		return
	}
	var removed []string
	for _, k := range referenceKinds() {
		if r.kinds.has(k.gvk.Kind) && !now[k.gvk.Kind] {
			removed = append(removed, k.gvk.Kind)
		}
	}
	added := r.kinds.set(now)
	if len(added)+len(removed) == 0 {
		return
	}
	logger.Info("the admission kinds served by the API server changed", "groupVersion", admissionGroupVersion.String(),
		"nowServed", added, "noLongerServed", removed)
	r.onChange(ctx, added, removed)
}
