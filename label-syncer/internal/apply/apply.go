// SPDX-License-Identifier: Apache-2.0

package apply

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt-plugins/framework/label-syncer/labelsync"
	"github.com/kubevirt-plugins/framework/label-syncer/syncevents"
	"github.com/kubevirt-plugins/framework/label-syncer/syncmetrics"
)

// DefaultMaxAttempts is used when Patcher.MaxAttempts is 0.
const DefaultMaxAttempts = 5

// Patcher patches targets of one kind.
type Patcher struct {
	// Writer sends the patches.
	Writer client.Writer
	// Reader reads a target again after a failed test; it should bypass
	// the cache (the manager's APIReader), or the retry may plan from the
	// same stale state.
	Reader client.Reader
	// Metrics counts patches, conflicts and refused keys. Nil records
	// nothing.
	Metrics *syncmetrics.Metrics
	// Events records refused keys and failed patches, aggregated. Nil
	// records nothing.
	Events *syncevents.Recorder
	// Target is the kind for metrics and errors, e.g. syncmetrics.TargetPod.
	Target string
	// MaxAttempts bounds the patches sent per call. Default
	// DefaultMaxAttempts.
	MaxAttempts int
}

// Planner computes the change for a target's current metadata.
type Planner func(target labelsync.Metadata) labelsync.Change

// Apply brings obj in line: it plans from obj, patches when the plan is not
// empty, and retries from a fresh read when the patch's test fails. obj is
// left holding the last state seen. It returns the change planned last:
// written, or empty when none was needed (its Refused keys are listed all
// the same); an empty change when the target is gone.
func (p *Patcher) Apply(ctx context.Context, obj client.Object, plan Planner) (labelsync.Change, error) {
	attempts := p.MaxAttempts
	if attempts <= 0 {
		attempts = DefaultMaxAttempts
	}
	var lastErr error
	for range attempts {
		change := plan(labelsync.Metadata{Labels: obj.GetLabels(), Annotations: obj.GetAnnotations()})
		if change.Empty() {
			return change, nil
		}
		data, err := change.JSONPatch(obj.GetUID())
		if err != nil {
			return labelsync.Change{}, fmt.Errorf("%s %s: %w", p.Target, client.ObjectKeyFromObject(obj), err)
		}
		err = p.Writer.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, data))
		switch {
		case err == nil:
			p.Metrics.Patched(p.Target)
			return change, nil
		case apierrors.IsNotFound(err):
			return labelsync.Change{}, nil
		case !apierrors.IsInvalid(err) && !apierrors.IsConflict(err):
			return labelsync.Change{}, fmt.Errorf("patching %s %s: %w", p.Target, client.ObjectKeyFromObject(obj), err)
		}
		// The server refused the patch. A failed test shows as 422 (or
		// 409); tell it from a patch that can never apply by whether the
		// target moved on since it was read.
		fresh, ok := obj.DeepCopyObject().(client.Object)
		if !ok {
			return labelsync.Change{}, fmt.Errorf("%s %s: copy is not a client.Object", p.Target, client.ObjectKeyFromObject(obj))
		}
		if gerr := p.Reader.Get(ctx, client.ObjectKeyFromObject(obj), fresh); gerr != nil {
			if apierrors.IsNotFound(gerr) {
				return labelsync.Change{}, nil
			}
			return labelsync.Change{}, fmt.Errorf("re-reading %s %s after a refused patch (%w): %w", p.Target, client.ObjectKeyFromObject(obj), err, gerr)
		}
		if fresh.GetResourceVersion() == obj.GetResourceVersion() {
			return labelsync.Change{}, fmt.Errorf("patching %s %s: refused on an unchanged object: %w", p.Target, client.ObjectKeyFromObject(obj), err)
		}
		p.Metrics.Conflict(p.Target)
		lastErr = err
		copyInto(obj, fresh)
	}
	return labelsync.Change{}, fmt.Errorf("patching %s %s: still conflicting after %d attempts: %w", p.Target, client.ObjectKeyFromObject(obj), attempts, lastErr)
}

// Report tells what a person must know of one sync of obj, whose result
// Apply returned: each key the change refused is logged, counted and
// recorded as an event, and so is err, a failed patch. Events are recorded
// on regarding (the VMI), with related (the VM or the Pod). A routine sync
// reports nothing here: the caller counts it and logs it at verbosity 1.
func (p *Patcher) Report(log logr.Logger, regarding, related runtime.Object, obj client.Object, change labelsync.Change, err error) {
	for _, r := range change.Refused {
		p.Metrics.Refused(p.Target, r.Kind)
		log.Info("key not synced: the target cannot take it", "target", p.Target, "name", obj.GetName(),
			"keyKind", r.Kind, "key", r.Key, "reason", r.Reason)
		p.Events.KeyRefused(regarding, related, p.Target, obj.GetName(), r.Kind, r.Key, r.Reason)
	}
	if err != nil {
		p.Events.PatchFailed(regarding, related, p.Target, err)
	}
}

// copyInto makes dst hold src's metadata, which is all Apply plans from.
func copyInto(dst, src client.Object) {
	dst.SetLabels(src.GetLabels())
	dst.SetAnnotations(src.GetAnnotations())
	dst.SetResourceVersion(src.GetResourceVersion())
	dst.SetUID(src.GetUID())
}
