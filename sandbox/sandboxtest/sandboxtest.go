// Package sandboxtest holds what front ends' tests need of a sandbox:
// runs that end in every kind of [sandbox.Verdict].
package sandboxtest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// A Run is what a [sandbox.Runner] returned for one run.
type Run struct {
	Name   string
	Result *sandbox.Result
	Err    error
}

// Verdict is the run's verdict.
func (r Run) Verdict() sandbox.Verdict { return sandbox.VerdictOf(r.Result, r.Err) }

// Verdicts returns a run for every kind of verdict, and one that hit a
// limit that did not end it, each with the default limits.
func Verdicts() []Run {
	runs := []Run{
		{"ok", &sandbox.Result{Stdout: []byte("42\n")}, nil},
		{"exit", &sandbox.Result{ExitCode: 1, Stderr: []byte("ZeroDivisionError: division by zero\n")}, nil},
		{"timeout", &sandbox.Result{ExitCode: 137, Limit: sandbox.LimitTimeout}, nil},
		{"memory", &sandbox.Result{ExitCode: 137, Limit: sandbox.LimitMemory, Stderr: []byte("Killed\n")}, nil},
		{"cpu", &sandbox.Result{ExitCode: 152, Limit: sandbox.LimitCPU}, nil},
		{"processes", &sandbox.Result{Stdout: []byte("done\n"), Limit: sandbox.LimitProcesses}, nil},
		{"gone", &sandbox.Result{ExitCode: 137, Gone: "the Kubernetes sandbox sb-1 was deleted"}, nil},
		{"stopped", nil, fmt.Errorf("sandbox: run: %w", context.Canceled)},
		{"error", nil, fmt.Errorf("the sandbox failed before running the code (%w)", &sandbox.Error{Op: "start", Err: errors.New("no user namespaces")})},
	}
	for _, r := range runs {
		if r.Result != nil {
			r.Result.Duration = time.Second
			r.Result.Bound(sandbox.Limits{})
		}
	}
	return runs
}
