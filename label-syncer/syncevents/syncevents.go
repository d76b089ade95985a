// SPDX-License-Identifier: Apache-2.0

package syncevents

import (
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
)

// Reasons of the events, all of type Warning.
const (
	// ReasonKeyRefused: a source key an entry selects cannot be written on
	// the target; it is left as it is there and the other keys are synced.
	ReasonKeyRefused = "SyncKeyRefused"
	// ReasonPatchFailed: the API server refused a patch for another reason
	// than a concurrent change; the sync is retried with back-off.
	ReasonPatchFailed = "SyncPatchFailed"
)

// action is the action of every event: what failed.
const action = "SyncMetadata"

// Defaults of Options.
const (
	DefaultInterval    = 10 * time.Minute
	DefaultMaxProblems = 64
)

// Options configures a Recorder. The zero value is ready to use.
type Options struct {
	// Interval is the least time between two events of one problem, and
	// the window over which MaxProblems counts. Default DefaultInterval.
	Interval time.Duration
	// MaxProblems bounds the distinct problems given an event of their
	// own per interval; the problems beyond share one event. Default
	// DefaultMaxProblems.
	MaxProblems int
	// Clock tells the time. Default: the real clock.
	Clock clock.PassiveClock
}

// Recorder records the syncer's Warning events, aggregated (see the package
// documentation). A nil *Recorder records nothing. It is safe for concurrent
// use; share one between the reconcilers so that the bound holds for the
// whole syncer.
type Recorder struct {
	events   events.EventRecorder
	interval time.Duration
	max      int
	clock    clock.PassiveClock

	mu sync.Mutex
	// window is when the current interval started; given counts the
	// problems that got their own event in it, shared whether the
	// problems beyond got their shared one.
	window time.Time
	given  int
	shared bool
	// problems holds the problems met, with when each last got an event
	// and how many objects showed it since.
	problems map[problem]*tally
}

type problem struct {
	reason, target, subject string
}

type tally struct {
	last  time.Time
	since int
}

// New returns a Recorder writing through rec.
func New(rec events.EventRecorder, opts Options) *Recorder {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.MaxProblems <= 0 {
		opts.MaxProblems = DefaultMaxProblems
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Recorder{events: rec, interval: opts.Interval, max: opts.MaxProblems, clock: opts.Clock, problems: map[problem]*tally{}}
}

// KeyRefused records that the source key of kind ("label" or
// "annotation") cannot be written on a target of kind target (a
// VirtualMachineInstance or a Pod), named targetName, for the reason why.
// regarding is the VMI the event is recorded on, related the VM or Pod.
func (r *Recorder) KeyRefused(regarding, related runtime.Object, target, targetName, kind, key, why string) {
	r.record(problem{reason: ReasonKeyRefused, target: target, subject: kind + " " + key}, regarding, related,
		fmt.Sprintf("%s %s not synced to %s %s: %s", kind, key, target, targetName, why))
}

// PatchFailed records that a patch of a target of kind target failed with
// err. Failures are told apart by the API status reason of err (Forbidden,
// Invalid, ...).
func (r *Recorder) PatchFailed(regarding, related runtime.Object, target string, err error) {
	reason := string(apierrors.ReasonForError(err))
	if reason == "" {
		reason = "Unknown"
	}
	r.record(problem{reason: ReasonPatchFailed, target: target, subject: reason}, regarding, related, err.Error())
}

func (r *Recorder) record(p problem, regarding, related runtime.Object, note string) {
	if r == nil || r.events == nil {
		return
	}
	now := r.clock.Now()
	r.mu.Lock()
	if now.Sub(r.window) >= r.interval {
		r.window, r.given, r.shared = now, 0, false
		// Forget the problems whose last event is older than an interval
		// and that nothing showed since: the map stays as small as the
		// problems seen lately.
		for k, t := range r.problems {
			if t.since == 0 && now.Sub(t.last) >= r.interval {
				delete(r.problems, k)
			}
		}
	}
	t, known := r.problems[p]
	if known && now.Sub(t.last) < r.interval {
		t.since++
		r.mu.Unlock()
		return
	}
	if r.given >= r.max {
		if known {
			t.since++
		}
		shared := r.shared
		r.shared = true
		r.mu.Unlock()
		if !shared {
			r.events.Eventf(regarding, related, corev1.EventTypeWarning, p.reason, action,
				"more than %d distinct problems in %s; this one and the next get no event of their own until the interval ends: %s",
				r.max, r.interval, truncate(note))
		}
		return
	}
	if !known {
		t = &tally{}
		r.problems[p] = t
	}
	since := t.since
	t.last, t.since = now, 0
	r.given++
	r.mu.Unlock()
	if since > 0 {
		note = fmt.Sprintf("%s (and on %d more objects since the last event of this problem)", note, since)
	}
	r.events.Eventf(regarding, related, corev1.EventTypeWarning, p.reason, action,
		"%s; at most one event per problem per %s", truncate(note), r.interval)
}

// truncate keeps a note within what an event holds (1 kB) with room for
// the recorder's own words.
func truncate(note string) string {
	const limit = 800
	if len(note) <= limit {
		return note
	}
	return note[:limit] + "..."
}
