package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// FormatSize writes a byte count for people (and models) to read: "1
// byte", "812 bytes", "2.3 KiB", "512.0 MiB", "1.5 GiB". Every front end
// shows sizes with it.
func FormatSize(n int64) string {
	switch {
	case n == 1:
		return "1 byte"
	case n < 1<<10:
		return strconv.FormatInt(n, 10) + " bytes"
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}

// FormatCPUs writes a number of CPUs: "1 CPU", "0.5 CPU", "2 CPUs".
func FormatCPUs(n float64) string {
	if n > 1 {
		return strconv.FormatFloat(n, 'g', -1, 64) + " CPUs"
	}
	return strconv.FormatFloat(n, 'g', -1, 64) + " CPU"
}

// VerdictKind is how a run ended, one of the Verdict* constants. Its
// values are short words fit for logs and metrics labels.
type VerdictKind string

const (
	VerdictOK      VerdictKind = "ok"      // the program exited with status 0
	VerdictExit    VerdictKind = "exit"    // it exited with another status (an uncaught exception: 1)
	VerdictTimeout VerdictKind = "timeout" // the wall clock ended it
	VerdictMemory  VerdictKind = "memory"  // the memory limit ended it
	VerdictCPU     VerdictKind = "cpu"     // the CPU-time limit ended it
	VerdictStopped VerdictKind = "stopped" // the caller ended the run: its context ended
	VerdictGone    VerdictKind = "gone"    // the sandbox went away during the run, which ended the program
	VerdictError   VerdictKind = "error"   // the code could not be run: the sandbox machinery failed, or the request was refused
)

// A Verdict says how a run ended, once for every front end: the Slack
// cards, the terminal's cards, the plain chat and the model's tool result
// show its Phrase (and Note) as they are, and choose only how to show
// its Kind (an emoji, a colour). None of them maps exit codes or limits
// to words of its own.
type Verdict struct {
	Kind VerdictKind
	// Exit is the program's exit status (137 for a program killed with
	// SIGKILL); 0 when there was no program to end (stopped, error).
	Exit int
	// Phrase says what happened in a few lower-case words, with the
	// value of the limit that ended the run: "exit 0", "exit 1", "timed
	// out after 30s", "killed at the memory limit of 512.0 MiB", "killed
	// at the CPU-time limit of 1m0s", "stopped", "the Kubernetes sandbox
	// sb-1 was deleted during the run", "could not run the code". It holds no
	// text of the program's.
	Phrase string
	// Note names a limit the program hit that did not end the run, with
	// its value: "reached the limit of 64 processes and threads", "a
	// write failed at the disk limit of 64.0 MiB"; "" when none.
	Note string
}

// Failed reports whether the run did not end well.
func (v Verdict) Failed() bool { return v.Kind != VerdictOK }

// Limited reports whether a limit of the sandbox (the wall clock, memory,
// CPU time) ended the run.
func (v Verdict) Limited() bool {
	return v.Kind == VerdictTimeout || v.Kind == VerdictMemory || v.Kind == VerdictCPU
}

// String is the Phrase, then the Note: "exit 0 · reached the limit of 64
// processes and threads".
func (v Verdict) String() string {
	if v.Note == "" {
		return v.Phrase
	}
	return v.Phrase + " · " + v.Note
}

// Phrases of the verdicts of runs that have no result.
const (
	phraseStopped = "stopped"
	phraseExpired = "stopped: out of time"
	phraseError   = "could not run the code"
)

// Verdict says how the run ended, with the values of the limits it ran
// under ([Result.Limits]; the defaults where that is zero).
func (r *Result) Verdict() Verdict {
	lim := r.Limits.WithDefaults()
	v := Verdict{Kind: VerdictOK, Exit: r.ExitCode, Phrase: "exit " + strconv.Itoa(r.ExitCode)}
	switch {
	case r.Gone != "":
		v.Kind, v.Phrase = VerdictGone, r.Gone+" during the run"
	case r.Limit == LimitTimeout:
		v.Kind, v.Phrase = VerdictTimeout, "timed out after "+lim.Timeout.String()
	case r.Limit == LimitMemory:
		v.Kind, v.Phrase = VerdictMemory, "killed at the memory limit of "+FormatSize(lim.Memory)
	case r.Limit == LimitCPU:
		v.Kind, v.Phrase = VerdictCPU, "killed at the CPU-time limit of "+lim.CPUTime.String()
	case r.ExitCode != 0:
		v.Kind = VerdictExit
	}
	switch r.Limit {
	case LimitNone, LimitTimeout, LimitMemory, LimitCPU:
	case LimitProcesses:
		v.Note = fmt.Sprintf("reached the limit of %d processes and threads", lim.Processes)
	case LimitDisk:
		v.Note = "a write failed at the disk limit of " + FormatSize(lim.DiskSize)
	default:
		v.Note = fmt.Sprintf("reached the %s limit", r.Limit)
	}
	return v
}

// VerdictOf is the verdict on a run that returned res and err: res's
// when err is nil; stopped when err says the caller's context ended the
// run (cancelled, or past its deadline: "stopped: out of time"); else
// the code could not be run (the error says why).
func VerdictOf(res *Result, err error) Verdict {
	switch {
	case errors.Is(err, context.Canceled):
		return Verdict{Kind: VerdictStopped, Phrase: phraseStopped}
	case errors.Is(err, context.DeadlineExceeded):
		return Verdict{Kind: VerdictStopped, Phrase: phraseExpired}
	case err != nil || res == nil:
		return Verdict{Kind: VerdictError, Phrase: phraseError}
	}
	return res.Verdict()
}

// Stopped is the verdict on a run its caller stopped.
func Stopped() Verdict { return VerdictOf(nil, context.Canceled) }
