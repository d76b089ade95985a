// SPDX-License-Identifier: Apache-2.0

package sdktest

import (
	"context"
	"fmt"
	"io"

	"google.golang.org/grpc"
)

// Status is the outcome of one check.
type Status string

const (
	// Pass: the hook server keeps the rule.
	Pass Status = "PASS"
	// Fail: the hook server breaks a rule of the contract.
	Fail Status = "FAIL"
	// Warn: the hook server does something the contract does not ask for
	// but does not forbid, such as implementing an RPC it is not permitted.
	Warn Status = "WARN"
)

// Check is one rule of the contract, run against a connected hook server.
type Check struct {
	// Name identifies the rule, for example "GuestDefinition/Idempotent".
	Name string
	// Rule is the sentence of the contract the check enforces.
	Rule string
	run  func(ctx context.Context, conn grpc.ClientConnInterface) outcome
}

// outcome is what a check's run returns: an error fails the check, a
// warning (without error) makes it WARN, detail explains a pass.
type outcome struct {
	err     error
	warning string
	detail  string
}

func passed(format string, args ...any) outcome { return outcome{detail: fmt.Sprintf(format, args...)} }
func failed(err error) outcome                  { return outcome{err: err} }

// Result is the outcome of one check.
type Result struct {
	Check  string
	Rule   string
	Status Status
	// Detail says what was seen: for a failure, which rule and what the
	// server did.
	Detail string
}

// String renders the result as one line: "FAIL GuestDefinition/Idempotent: ...".
func (r Result) String() string {
	if r.Detail == "" {
		return fmt.Sprintf("%s %s", r.Status, r.Check)
	}
	return fmt.Sprintf("%s %s: %s", r.Status, r.Check, r.Detail)
}

// Run runs one check.
func (c Check) Run(ctx context.Context, conn grpc.ClientConnInterface) Result {
	o := c.run(ctx, conn)
	r := Result{Check: c.Name, Rule: c.Rule, Status: Pass, Detail: o.detail}
	switch {
	case o.err != nil:
		r.Status, r.Detail = Fail, fmt.Sprintf("%s: %v", c.Rule, o.err)
	case o.warning != "":
		r.Status, r.Detail = Warn, o.warning
	}
	return r
}

// RunChecks runs checks in order and returns their results.
func RunChecks(ctx context.Context, conn grpc.ClientConnInterface, checks []Check) []Result {
	out := make([]Result, 0, len(checks))
	for _, c := range checks {
		out = append(out, c.Run(ctx, conn))
	}
	return out
}

// Summary counts the results per status.
type Summary struct{ Passed, Failed, Warned int }

// Summarize counts results.
func Summarize(results []Result) Summary {
	var s Summary
	for _, r := range results {
		switch r.Status {
		case Pass:
			s.Passed++
		case Fail:
			s.Failed++
		case Warn:
			s.Warned++
		}
	}
	return s
}

func (s Summary) String() string {
	return fmt.Sprintf("%d passed, %d failed, %d warnings", s.Passed, s.Failed, s.Warned)
}

// WriteReport writes one line per result and the summary line, and returns
// the summary.
func WriteReport(w io.Writer, results []Result) Summary {
	for _, r := range results {
		fmt.Fprintln(w, r.String())
	}
	s := Summarize(results)
	fmt.Fprintln(w, s.String())
	return s
}
