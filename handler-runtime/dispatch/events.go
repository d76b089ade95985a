// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubevirt-plugins/framework/api/hookresult"
)

// Reasons of the Warning Events a Dispatcher writes on a VMI for a node hook
// that failed (Options.EventRecorder).
const (
	// ReasonNodeHookFailed: outcome hookresult.Error, the hook failed under
	// failureStrategy Fail (or its plugin's condition could not be
	// evaluated): the dispatch failed.
	ReasonNodeHookFailed = "NodeHookFailed"
	// ReasonNodeHookFailureIgnored: outcome hookresult.Ignored, the hook
	// failed under failureStrategy Ignore and the dispatch went on without
	// it.
	ReasonNodeHookFailureIgnored = "NodeHookFailureIgnored"
)

// DefaultEventInterval is how long, after writing an Event for a VMI and a
// plugin, further failures of that plugin's node hooks for that VMI are
// only counted.
const DefaultEventInterval = 10 * time.Minute

// maxEventMessage bounds an Event's message, as the events API does. A
// longer message is cut at a character boundary and ends with "...": the
// message stays valid UTF-8.
const maxEventMessage = 1024

// pruneEventKeysAbove is the number of remembered (VMI, plugin) pairs above
// which the expired ones are dropped when a new one is added.
const pruneEventKeysAbove = 1024

// eventWriter writes a Warning Event on the VMI for a failed node hook, at
// most one per VMI and plugin per interval; the failures in between are
// counted and named in the next Event.
type eventWriter struct {
	recorder record.EventRecorder
	interval time.Duration
	clock    clock.PassiveClock

	mu   sync.Mutex
	last map[eventKey]*eventState
}

type eventKey struct{ vmi, plugin string }

type eventState struct {
	at         time.Time
	suppressed int
}

// newEventWriter returns nil when opts has no EventRecorder.
func newEventWriter(opts Options) *eventWriter {
	if opts.EventRecorder == nil {
		return nil
	}
	w := &eventWriter{recorder: opts.EventRecorder, interval: opts.EventInterval, clock: opts.Clock, last: map[eventKey]*eventState{}}
	if w.interval <= 0 {
		w.interval = DefaultEventInterval
	}
	if w.clock == nil {
		w.clock = clock.RealClock{}
	}
	return w
}

// failed writes the Event for err when it is a *HookError and none was
// written for this VMI and plugin within the interval. outcome is the
// hook's: hookresult.Ignored (failureStrategy Ignore, the dispatch went on)
// or hookresult.Error (the dispatch failed).
func (w *eventWriter) failed(vmi *kubevirtv1.VirtualMachineInstance, err error, outcome hookresult.Outcome) {
	if w == nil {
		return
	}
	herr, ok := errors.AsType[*HookError](err)
	if !ok {
		return
	}
	reason, effect := ReasonNodeHookFailed, "failureStrategy Fail: the VMI's "+string(herr.HookPoint)+" fails"
	if outcome == hookresult.Ignored {
		reason, effect = ReasonNodeHookFailureIgnored, "failureStrategy Ignore: going on without it"
	}
	w.write(vmi, herr.Plugin, corev1.EventTypeWarning, reason, fmt.Sprintf("%s (%s)", herr.Error(), effect))
}

// write records the Event unless one was written for this VMI and plugin
// within the interval, in which case it is only counted.
func (w *eventWriter) write(vmi *kubevirtv1.VirtualMachineInstance, plugin, eventType, reason, msg string) {
	if w == nil {
		return
	}
	key := eventKey{vmi: lockKey(vmi), plugin: plugin}
	now := w.clock.Now()
	w.mu.Lock()
	st := w.last[key]
	if st != nil && now.Sub(st.at) < w.interval {
		st.suppressed++
		w.mu.Unlock()
		return
	}
	suppressed := 0
	if st != nil {
		suppressed = st.suppressed
	} else if len(w.last) >= pruneEventKeysAbove {
		w.pruneLocked(now)
	}
	w.last[key] = &eventState{at: now}
	w.mu.Unlock()

	if suppressed > 0 {
		msg = fmt.Sprintf("%d more failures of plugin %q for this VMI since the last Event; latest: %s", suppressed, plugin, msg)
	}
	msg = cutText(msg, maxEventMessage, "...")
	w.recorder.Event(vmi, eventType, reason, msg)
}

// pruneLocked forgets the pairs whose interval is over.
func (w *eventWriter) pruneLocked(now time.Time) {
	for k, st := range w.last {
		if now.Sub(st.at) >= w.interval {
			delete(w.last, k)
		}
	}
}
