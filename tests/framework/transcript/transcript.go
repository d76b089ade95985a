// SPDX-License-Identifier: Apache-2.0

// Package transcript prints a scenario as titled steps with one PASS or
// FAIL line per check, and keeps what it found: the shape of `make demo`'s
// output, for the scenarios behind it (tests/demo, tests/cluster).
package transcript

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Check is the outcome of one check of one step.
type Check struct {
	Step   string
	Name   string
	Passed bool
	Detail string
}

// Result is what a scenario found.
type Result struct {
	Checks []Check
	// Err is the error that ended the scenario early, if any.
	Err error
}

// Passed reports whether the scenario ran to its end and every check
// passed.
func (r *Result) Passed() bool {
	return r.Err == nil && len(r.Checks) > 0 && len(r.Failed()) == 0
}

// Failed returns the checks that failed.
func (r *Result) Failed() []Check {
	var out []Check
	for _, c := range r.Checks {
		if !c.Passed {
			out = append(out, c)
		}
	}
	return out
}

// Step is one titled part of a scenario.
type Step struct {
	Title string
	Run   func(ctx context.Context) error
	// Timeout bounds this step instead of the Runner's StepTimeout, for a
	// step known to be long; zero keeps StepTimeout.
	Timeout time.Duration
}

// ErrCheckFailed ends a step whose later work depends on a check that
// failed (the check says why).
var ErrCheckFailed = errors.New("a check this step depends on failed")

// Runner prints the transcript and records the checks.
type Runner struct {
	// Progress is how often a step still running says so. Default 15s.
	Progress time.Duration
	// StepTimeout bounds each step. Default 15m.
	StepTimeout time.Duration
	// KeepGoing plays the next step after one whose checks failed
	// (ErrCheckFailed) instead of ending there: for a run whose point is
	// to see which checks fail. Any other error still ends the run.
	KeepGoing bool

	res     Result
	out     *lockedWriter
	current string
	n       int
	cleanup []func() error
	mu      sync.Mutex
}

// New returns a Runner writing to out.
func New(out io.Writer) *Runner {
	return &Runner{out: &lockedWriter{w: out}, Progress: 15 * time.Second, StepTimeout: 15 * time.Minute}
}

// Printf prints to the transcript.
func (r *Runner) Printf(format string, args ...any) {
	fmt.Fprintf(r.out, format, args...)
}

// Show prints text indented under the current step.
func (r *Runner) Show(text string) {
	for line := range strings.SplitSeq(strings.TrimRight(text, "\n"), "\n") {
		r.Printf("   %s\n", line)
	}
}

// Check records and prints one check of the current step and returns ok.
func (r *Runner) Check(name string, ok bool, detailFormat string, args ...any) bool {
	detail := strings.TrimRight(fmt.Sprintf(detailFormat, args...), "\n")
	r.mu.Lock()
	r.res.Checks = append(r.res.Checks, Check{Step: r.current, Name: name, Passed: ok, Detail: detail})
	r.mu.Unlock()
	mark := "PASS"
	if !ok {
		mark = "FAIL"
	}
	if detail != "" {
		r.Printf("   [%s] %s: %s\n", mark, name, strings.ReplaceAll(detail, "\n", "\n          "))
	} else {
		r.Printf("   [%s] %s\n", mark, name)
	}
	return ok
}

// Cleanup registers fn to run, in reverse order of registration, when Run
// ends.
func (r *Runner) Cleanup(fn func() error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanup = append(r.cleanup, fn)
}

// Run plays the steps in order; a step that fails ends the scenario, as
// the later ones depend on it (unless KeepGoing, for failed checks). The cleanups run whatever happened, then
// the summary is printed.
func (r *Runner) Run(ctx context.Context, steps []Step) *Result {
	defer func() {
		r.Printf("\n== Cleaning up\n")
		r.mu.Lock()
		fns := r.cleanup
		r.cleanup = nil
		r.mu.Unlock()
		for _, fn := range slices.Backward(fns) {
			if err := fn(); err != nil {
				r.Printf("   cleanup: %v\n", err)
			}
		}
		r.Printf("   done\n")
		r.summary()
	}()
	for _, st := range steps {
		if err := ctx.Err(); err != nil {
			r.res.Err = fmt.Errorf("interrupted before %q: %w", st.Title, err)
			r.Printf("\n%s\n", r.res.Err)
			return &r.res
		}
		if err := r.step(ctx, st); err != nil {
			if r.KeepGoing && errors.Is(err, ErrCheckFailed) && ctx.Err() == nil {
				continue
			}
			if ctx.Err() != nil {
				err = fmt.Errorf("interrupted: %w", err)
			}
			r.res.Err = fmt.Errorf("step %q: %w", st.Title, err)
			return &r.res
		}
	}
	return &r.res
}

func (r *Runner) step(ctx context.Context, st Step) error {
	r.n++
	r.current = st.Title
	r.Printf("\n== Step %d: %s\n", r.n, st.Title)
	start := time.Now()
	timeout := r.StepTimeout
	if st.Timeout > 0 {
		timeout = st.Timeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(r.Progress)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				r.Printf("   ... still working on %q (%s)\n", st.Title, time.Since(start).Round(time.Second))
			}
		}
	})
	err := st.Run(ctx)
	close(stop)
	wg.Wait()
	if err != nil {
		r.Check("step completed", false, "%v", err)
		return err
	}
	r.Printf("   (%s)\n", time.Since(start).Round(100*time.Millisecond))
	return nil
}

func (r *Runner) summary() {
	failed := r.res.Failed()
	r.Printf("\n== Summary: %d checks, %d failed\n", len(r.res.Checks), len(failed))
	for _, c := range failed {
		r.Printf("   FAIL [%s] %s: %s\n", c.Step, c.Name, c.Detail)
	}
	switch {
	case r.res.Err != nil:
		r.Printf("   the scenario stopped early: %v\n", r.res.Err)
	case len(failed) == 0:
		r.Printf("   every check passed\n")
	}
}

// LockedWriter returns a writer that serializes the writes to w, for
// output written from more than one goroutine.
func LockedWriter(w io.Writer) io.Writer { return &lockedWriter{w: w} }

// lockedWriter serializes writes from a step and its progress ticker.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestLog is a writer that sends whole lines to t.Log, for a scenario
// run as a test.
func TestLog(t testing.TB) io.Writer { return &testWriter{t: t} }

type testWriter struct {
	t   testing.TB
	buf strings.Builder
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	s := w.buf.String()
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		w.t.Log(s[:i])
		w.buf.Reset()
		w.buf.WriteString(s[i+1:])
	}
	return len(p), nil
}
