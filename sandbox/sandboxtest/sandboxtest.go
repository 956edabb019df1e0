// Package sandboxtest holds what tests need of a sandbox: for front
// ends, runs that end in every kind of [sandbox.Verdict] ([Verdicts]);
// for backends, their conformance suite ([TestRunner]).
//
// The conformance suite is in the manner of testing/fstest.TestFS and
// golang.org/x/net/nettest's TestConn: each backend's tests call
// [TestRunner] with its runner, in every mode the backend has (the local
// one with cgroups and without), and a backend that does not pass it is
// not done.
//
// The suite runs the same programs on every backend and checks what the
// front ends rely on: output and its cap; exit codes (a timeout is 137,
// SIGKILL, with Limit "timeout", which `sandpiper exec` turns into 124;
// the memory limit 137 or a MemoryError; the CPU-time limit 152,
// SIGXCPU); the limit named in [sandbox.Result.Limit]; input files in and
// output files out; a fresh sandbox per run; runs at once; state kept
// between runs; and what the backend reports of itself ([sandbox.Info]).
// Where a backend does not enforce a limit, or keeps no state, its Info
// says so, and the test of it is skipped with the backend's reason.
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
