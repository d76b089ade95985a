// SPDX-License-Identifier: Apache-2.0

package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/kubevirt-plugins/framework/tests/framework/docker"
	"github.com/kubevirt-plugins/framework/tests/framework/repo"
	"github.com/kubevirt-plugins/framework/tests/framework/transcript"
)

// Options configure Run.
type Options struct {
	// Out receives the step-by-step transcript: step titles, what each step
	// shows, and one PASS or FAIL line per check. Default: os.Stdout.
	Out io.Writer
	// Log receives the output of the processes and containers the scenario
	// starts, and the runtimes' logs. Default: io.Discard.
	Log io.Writer
	// Progress is how often a step that is still running says so on Out.
	// Default: 15s.
	Progress time.Duration
	// Root is the repository checkout the scripts (hack/images.sh), the
	// deploy/ manifests and the samples are read from. Default: repo.Root().
	// The API server finds the CRDs from the working directory, as
	// tests/framework/apiserver does.
	Root string
	// StepTimeout bounds each step, as a guard against hangs. Default: 15m
	// (the first image build on a cold cache is the slowest step).
	StepTimeout time.Duration
}

func (o Options) withDefaults() (Options, error) {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Progress <= 0 {
		o.Progress = 15 * time.Second
	}
	if o.StepTimeout <= 0 {
		o.StepTimeout = 15 * time.Minute
	}
	if o.Root == "" {
		root, err := repo.Root()
		if err != nil {
			return o, err
		}
		o.Root = root
	}
	return o, nil
}

// Check is the outcome of one check of one step.
type Check = transcript.Check

// Result is what Run found.
type Result = transcript.Result

// Run plays the scenario and tears down everything it started, also when
// ctx is cancelled (Ctrl-C in the demo command) or a step fails. A step
// that fails ends the scenario: the later ones depend on it.
func Run(ctx context.Context, opts Options) *Result {
	docker.NoReaper()
	opts, err := opts.withDefaults()
	if err != nil {
		return &Result{Err: err}
	}
	t := transcript.New(opts.Out)
	t.Progress, t.StepTimeout = opts.Progress, opts.StepTimeout
	r := &runner{Runner: t}
	r.log = funcr.New(func(prefix, args string) {
		fmt.Fprintf(opts.Log, "%s %s %s\n", time.Now().Format("15:04:05.000"), prefix, args)
	}, funcr.Options{Verbosity: 1})
	s := &scenario{runner: r, opts: opts, cleanup: cleanups{t}}
	var steps []transcript.Step
	for _, st := range s.steps() {
		steps = append(steps, transcript.Step{Title: st.title, Run: st.run})
	}
	return t.Run(ctx, steps)
}

// step is one titled part of the scenario.
type step struct {
	title string
	run   func(ctx context.Context) error
}

// runner is the transcript (tests/framework/transcript) with the
// components' logger.
type runner struct {
	*transcript.Runner
	log logr.Logger
}

func (r *runner) show(text string) { r.Show(text) }

func (r *runner) check(name string, ok bool, detailFormat string, args ...any) bool {
	return r.Check(name, ok, detailFormat, args...)
}

// cleanups registers teardown functions with the transcript, which runs
// them in reverse order when the scenario ends.
type cleanups struct{ t *transcript.Runner }

func (c cleanups) add(fn func() error) { c.t.Cleanup(fn) }

var errCheckFailed = transcript.ErrCheckFailed
