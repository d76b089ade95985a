// SPDX-License-Identifier: Apache-2.0

package recorder

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/kubevirt-plugins/framework/protos/sdk"
)

// Event is one recorded node hook call, one JSON line in the events file.
type Event struct {
	// Seq numbers the calls from 1 in arrival order; it continues across
	// restarts of the server on the same file.
	Seq       uint64 `json:"seq"`
	HookPoint string `json:"hookPoint"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	Node      string `json:"node"`
	// Time is when the call arrived.
	Time time.Time `json:"time"`
	// Failed is true when the recorder answered the call with an error
	// because its hook point is in Options.FailHookPoints.
	Failed bool `json:"failed,omitempty"`
}

// Options configure a Recorder.
type Options struct {
	// Path is the JSON lines file events are appended to. Required. Its
	// directory is created when missing.
	Path string
	// Delay is how long each call takes after it is recorded; the call
	// ends early, with the context's error, when the caller gives up.
	// Default: 0.
	Delay time.Duration
	// FailHookPoints are answered with an error (after recording the
	// event and the delay). Default: none.
	FailHookPoints []sdk.NodeHookPoint
	// Now returns the time recorded for an event. Default: time.Now.
	Now func() time.Time
	// Logger receives one line per event. Default: logr.Discard().
	Logger logr.Logger
}

// Recorder implements sdk.NodeHookHandler.
type Recorder struct {
	opts Options
	fail map[sdk.NodeHookPoint]bool

	mu   sync.Mutex
	file *os.File
	seq  uint64
}

var _ sdk.NodeHookHandler = (*Recorder)(nil)

// New opens (or creates) the events file and continues its numbering.
func New(opts Options) (*Recorder, error) {
	if opts.Path == "" {
		return nil, errors.New("recorder: no events file path")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	events, err := ReadEvents(opts.Path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("recorder: %w", err)
	}
	r := &Recorder{opts: opts, fail: map[sdk.NodeHookPoint]bool{}}
	for _, e := range events {
		r.seq = max(r.seq, e.Seq)
	}
	for _, hp := range opts.FailHookPoints {
		r.fail[hp] = true
	}
	if err := os.MkdirAll(filepath.Dir(opts.Path), 0o755); err != nil {
		return nil, fmt.Errorf("recorder: events directory: %w", err)
	}
	r.file, err = os.OpenFile(opts.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("recorder: %w", err)
	}
	return r, nil
}

// ExecuteNodeHook records the event, waits Options.Delay, and fails when
// the hook point is one of Options.FailHookPoints.
func (r *Recorder) ExecuteNodeHook(ctx context.Context, req *sdk.NodeHookRequest) error {
	fail := r.fail[req.HookPoint]
	e, err := r.record(req, fail)
	if err != nil {
		return err
	}
	r.opts.Logger.Info("recorded node hook", "seq", e.Seq, "hookPoint", e.HookPoint,
		"vmi", e.Namespace+"/"+e.Name, "node", e.Node, "failing", fail)
	if r.opts.Delay > 0 {
		t := time.NewTimer(r.opts.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if fail {
		return fmt.Errorf("recorder: failing %s on purpose (event %d)", req.HookPoint, e.Seq)
	}
	return nil
}

func (r *Recorder) record(req *sdk.NodeHookRequest, failed bool) (Event, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.file == nil {
		return Event{}, errors.New("recorder: closed")
	}
	r.seq++
	e := Event{
		Seq:       r.seq,
		HookPoint: string(req.HookPoint),
		Namespace: req.VMI.Namespace,
		Name:      req.VMI.Name,
		UID:       string(req.VMI.UID),
		Node:      req.NodeName,
		Time:      r.opts.Now().UTC(),
		Failed:    failed,
	}
	line, err := json.Marshal(e)
	if err != nil {
		return Event{}, fmt.Errorf("recorder: encode event: %w", err)
	}
	// One write per line: with O_APPEND the line lands whole even if other
	// processes append to the same file.
	if _, err := r.file.Write(append(line, '\n')); err != nil {
		return Event{}, fmt.Errorf("recorder: append event: %w", err)
	}
	if err := r.file.Sync(); err != nil {
		return Event{}, fmt.Errorf("recorder: sync events file: %w", err)
	}
	return e, nil
}

// Close closes the events file; later calls fail.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.file == nil {
		return nil
	}
	err := r.file.Close()
	r.file = nil
	return err
}

// ReadEvents reads an events file.
func ReadEvents(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, n, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
}

// ParseHookPoints parses a comma separated list of node hook points.
func ParseHookPoints(list []string) ([]sdk.NodeHookPoint, error) {
	var out []sdk.NodeHookPoint
	for _, s := range list {
		if s == "" {
			continue
		}
		hp := sdk.NodeHookPoint(s)
		known := false
		for _, k := range sdk.NodeHookPoints() {
			known = known || k == hp
		}
		if !known {
			return nil, fmt.Errorf("unknown node hook point %q (want one of %v)", s, sdk.NodeHookPoints())
		}
		out = append(out, hp)
	}
	return out, nil
}
