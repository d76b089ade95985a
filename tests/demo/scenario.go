package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/kubevirt-plugins/framework/tests/framework/docker"
	"github.com/kubevirt-plugins/framework/tests/framework/repo"
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
type Check struct {
	Step   string
	Name   string
	Passed bool
	Detail string
}

// Result is what Run found.
type Result struct {
	Checks []Check
	// Err is the error that ended the scenario early, if any.
	Err error
}

// Passed reports whether the scenario ran to its end and every check
// passed.
func (r *Result) Passed() bool {
	if r.Err != nil || len(r.Checks) == 0 {
		return false
	}
	for _, c := range r.Checks {
		if !c.Passed {
			return false
		}
	}
	return true
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

// Run plays the scenario and tears down everything it started, also when
// ctx is cancelled (Ctrl-C in the demo command) or a step fails. A step
// that fails ends the scenario: the later ones depend on it.
func Run(ctx context.Context, opts Options) *Result {
	docker.NoReaper()
	res := &Result{}
	opts, err := opts.withDefaults()
	if err != nil {
		res.Err = err
		return res
	}
	r := &runner{opts: opts, res: res, out: &lockedWriter{w: opts.Out}}
	r.log = funcr.New(func(prefix, args string) {
		fmt.Fprintf(opts.Log, "%s %s %s\n", time.Now().Format("15:04:05.000"), prefix, args)
	}, funcr.Options{Verbosity: 1})
	s := &scenario{runner: r, opts: opts}
	defer func() {
		r.printf("\n== Cleaning up\n")
		for _, e := range s.cleanup.run() {
			r.printf("   cleanup: %v\n", e)
		}
		r.printf("   done\n")
		r.summary()
	}()
	for _, st := range s.steps() {
		if err := ctx.Err(); err != nil {
			res.Err = fmt.Errorf("interrupted before %q: %w", st.title, err)
			r.printf("\n%s\n", res.Err)
			return res
		}
		if err := r.step(ctx, st); err != nil {
			if ctx.Err() != nil {
				err = fmt.Errorf("interrupted: %w", err)
			}
			res.Err = fmt.Errorf("step %q: %w", st.title, err)
			return res
		}
	}
	return res
}

// step is one titled part of the scenario.
type step struct {
	title string
	run   func(ctx context.Context) error
}

type runner struct {
	opts    Options
	res     *Result
	out     *lockedWriter
	log     logr.Logger
	current string
	n       int
}

func (r *runner) printf(format string, args ...any) {
	fmt.Fprintf(r.out, format, args...)
}

// show prints text indented under the current step.
func (r *runner) show(text string) {
	for line := range strings.SplitSeq(strings.TrimRight(text, "\n"), "\n") {
		r.printf("   %s\n", line)
	}
}

// check records and prints one check of the current step.
func (r *runner) check(name string, ok bool, detailFormat string, args ...any) bool {
	detail := strings.TrimRight(fmt.Sprintf(detailFormat, args...), "\n")
	r.res.Checks = append(r.res.Checks, Check{Step: r.current, Name: name, Passed: ok, Detail: detail})
	mark := "PASS"
	if !ok {
		mark = "FAIL"
	}
	if detail != "" {
		// Later lines of a multi-line detail (a CEL error with its caret)
		// stay under the check.
		r.printf("   [%s] %s: %s\n", mark, name, strings.ReplaceAll(detail, "\n", "\n          "))
	} else {
		r.printf("   [%s] %s\n", mark, name)
	}
	return ok
}

func (r *runner) step(ctx context.Context, st step) error {
	r.n++
	r.current = st.title
	r.printf("\n== Step %d: %s\n", r.n, st.title)
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, r.opts.StepTimeout)
	defer cancel()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(r.opts.Progress)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				r.printf("   ... still working on %q (%s)\n", st.title, time.Since(start).Round(time.Second))
			}
		}
	})
	err := st.run(ctx)
	close(stop)
	wg.Wait()
	took := time.Since(start).Round(100 * time.Millisecond)
	if err != nil {
		r.check("step completed", false, "%v", err)
		return err
	}
	r.printf("   (%s)\n", took)
	return nil
}

func (r *runner) summary() {
	failed := r.res.Failed()
	r.printf("\n== Summary: %d checks, %d failed\n", len(r.res.Checks), len(failed))
	for _, c := range failed {
		r.printf("   FAIL [%s] %s: %s\n", c.Step, c.Name, c.Detail)
	}
	switch {
	case r.res.Err != nil:
		r.printf("   the scenario stopped early: %v\n", r.res.Err)
	case len(failed) == 0:
		r.printf("   every check passed\n")
	}
}

// lockedWriter serializes writes from the step and its progress ticker.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// cleanups runs registered teardown functions in reverse order.
type cleanups struct {
	mu  sync.Mutex
	fns []func() error
}

func (c *cleanups) add(fn func() error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fns = append(c.fns, fn)
}

func (c *cleanups) run() []error {
	c.mu.Lock()
	fns := c.fns
	c.fns = nil
	c.mu.Unlock()
	var errs []error
	for _, fn := range slices.Backward(fns) {
		if err := fn(); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

var errCheckFailed = errors.New("a check this step depends on failed")
