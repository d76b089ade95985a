// SPDX-License-Identifier: Apache-2.0

package transcript

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"
	"time"
)

// played runs three steps, the first failing with err, and lists the ones
// that ran.
func played(t *testing.T, keepGoing bool, err error) ([]string, *Result) {
	var ran []string
	step := func(name string, fail error) Step {
		return Step{Title: name, Run: func(context.Context) error {
			ran = append(ran, name)
			return fail
		}}
	}
	r := New(io.Discard)
	r.KeepGoing = keepGoing
	res := r.Run(t.Context(), []Step{step("one", err), step("two", nil), step("three", nil)})
	return ran, res
}

func TestAFailedStepEndsTheRun(t *testing.T) {
	ran, res := played(t, false, ErrCheckFailed)
	if !slices.Equal(ran, []string{"one"}) || res.Err == nil || res.Passed() {
		t.Fatalf("ran %v, err %v, passed %v; want only the first step, an error, not passed", ran, res.Err, res.Passed())
	}
}

func TestKeepGoingPlaysTheStepsAfterFailedChecks(t *testing.T) {
	ran, res := played(t, true, ErrCheckFailed)
	if !slices.Equal(ran, []string{"one", "two", "three"}) || res.Passed() || len(res.Failed()) != 1 {
		t.Fatalf("ran %v, passed %v, failed %v; want every step and the first one's failure kept", ran, res.Passed(), res.Failed())
	}
}

func TestKeepGoingStillEndsTheRunOnAnotherError(t *testing.T) {
	ran, res := played(t, true, errors.New("the cluster is gone"))
	if !slices.Equal(ran, []string{"one"}) || res.Err == nil {
		t.Fatalf("ran %v, err %v; want only the first step and its error", ran, res.Err)
	}
}

// TestAStepsOwnTimeoutReplacesTheRunners: a step with its own Timeout
// gets that long, one without gets StepTimeout.
func TestAStepsOwnTimeoutReplacesTheRunners(t *testing.T) {
	left := map[string]time.Duration{}
	step := func(name string, timeout time.Duration) Step {
		return Step{Title: name, Timeout: timeout, Run: func(ctx context.Context) error {
			deadline, ok := ctx.Deadline()
			if !ok {
				return errors.New("no deadline")
			}
			left[name] = time.Until(deadline)
			return nil
		}}
	}
	r := New(io.Discard)
	r.StepTimeout = time.Minute
	if res := r.Run(t.Context(), []Step{step("default", 0), step("long", time.Hour)}); res.Err != nil {
		t.Fatalf("run failed: %v", res.Err)
	}
	if d := left["default"]; d > time.Minute || d < 50*time.Second {
		t.Errorf("a step without its own timeout had %s, want the runner's minute", d)
	}
	if d := left["long"]; d > time.Hour || d < 59*time.Minute {
		t.Errorf("a step with an hour had %s", d)
	}
}
