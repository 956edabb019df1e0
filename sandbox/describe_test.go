package sandbox

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestFormatSize(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{
		{0, "0 bytes"}, {1, "1 byte"}, {1023, "1023 bytes"}, {1024, "1.0 KiB"}, {2355, "2.3 KiB"},
		{1 << 20, "1.0 MiB"}, {512 << 20, "512.0 MiB"}, {1 << 30, "1.0 GiB"}, {3 << 29, "1.5 GiB"},
	} {
		if got := FormatSize(tt.n); got != tt.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestVerdict(t *testing.T) {
	lim := Limits{Timeout: time.Second, Memory: 64 << 20, CPUTime: 90 * time.Second, Processes: 8, DiskSize: 1 << 20}
	for _, tt := range []struct {
		name string
		res  *Result
		err  error
		want Verdict
	}{
		{"ok", &Result{}, nil, Verdict{Kind: VerdictOK, Phrase: "exit 0"}},
		{"exception", &Result{ExitCode: 1}, nil, Verdict{Kind: VerdictExit, Exit: 1, Phrase: "exit 1"}},
		{"timeout", &Result{ExitCode: 137, Limit: LimitTimeout}, nil, Verdict{Kind: VerdictTimeout, Exit: 137, Phrase: "timed out after 1s"}},
		{"memory", &Result{ExitCode: 137, Limit: LimitMemory}, nil, Verdict{Kind: VerdictMemory, Exit: 137, Phrase: "killed at the memory limit of 64.0 MiB"}},
		{"memory error", &Result{ExitCode: 1, Limit: LimitMemory}, nil, Verdict{Kind: VerdictMemory, Exit: 1, Phrase: "killed at the memory limit of 64.0 MiB"}},
		{"cpu", &Result{ExitCode: 152, Limit: LimitCPU}, nil, Verdict{Kind: VerdictCPU, Exit: 152, Phrase: "killed at the CPU-time limit of 1m30s"}},
		{"processes, exit 0", &Result{Limit: LimitProcesses}, nil, Verdict{Kind: VerdictOK, Phrase: "exit 0", Note: "reached the limit of 8 processes and threads"}},
		{"processes, exit 1", &Result{ExitCode: 1, Limit: LimitProcesses}, nil, Verdict{Kind: VerdictExit, Exit: 1, Phrase: "exit 1", Note: "reached the limit of 8 processes and threads"}},
		{"disk", &Result{ExitCode: 1, Limit: LimitDisk}, nil, Verdict{Kind: VerdictExit, Exit: 1, Phrase: "exit 1", Note: "a write failed at the disk limit of 1.0 MiB"}},
		{"another limit", &Result{Limit: "gpu"}, nil, Verdict{Kind: VerdictOK, Phrase: "exit 0", Note: "reached the gpu limit"}},
		{"gone", &Result{ExitCode: 137, Gone: "the Kubernetes sandbox sb-1 was deleted"}, nil, Verdict{Kind: VerdictGone, Exit: 137, Phrase: "the Kubernetes sandbox sb-1 was deleted during the run"}},
		{"gone past the timeout", &Result{ExitCode: 137, Limit: LimitTimeout, Gone: "the Kubernetes sandbox sb-1 was deleted"}, nil, Verdict{Kind: VerdictGone, Exit: 137, Phrase: "the Kubernetes sandbox sb-1 was deleted during the run"}},
		{"stopped", nil, fmt.Errorf("sandbox: run: %w", context.Canceled), Verdict{Kind: VerdictStopped, Phrase: "stopped"}},
		{"out of time", nil, context.DeadlineExceeded, Verdict{Kind: VerdictStopped, Phrase: "stopped: out of time"}},
		{"machinery", nil, &Error{Op: "start", Err: errors.New("no user namespaces")}, Verdict{Kind: VerdictError, Phrase: "could not run the code"}},
		{"no result", nil, nil, Verdict{Kind: VerdictError, Phrase: "could not run the code"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.res != nil {
				tt.res.Bound(lim)
				if want := tt.want.Kind != VerdictOK; tt.res.Failed() != want {
					t.Errorf("Failed() = %v, want %v", !want, want)
				}
			}
			if got := VerdictOf(tt.res, tt.err); got != tt.want {
				t.Errorf("VerdictOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestVerdictDefaults: a result no backend bounded names the default
// limits.
func TestVerdictDefaults(t *testing.T) {
	r := &Result{ExitCode: 137, Limit: LimitTimeout}
	if got, want := r.Verdict().Phrase, "timed out after "+DefaultTimeout.String(); got != want {
		t.Errorf("Phrase = %q, want %q", got, want)
	}
	if got, want := (Verdict{Phrase: "exit 0", Note: "reached the gpu limit"}).String(), "exit 0 · reached the gpu limit"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}

// TestFormatCPUs: one CPU, or less, is singular.
func TestFormatCPUs(t *testing.T) {
	for n, want := range map[float64]string{1: "1 CPU", 0.5: "0.5 CPU", 2: "2 CPUs", 1.5: "1.5 CPUs"} {
		if got := FormatCPUs(n); got != want {
			t.Errorf("FormatCPUs(%g) = %q, want %q", n, got, want)
		}
	}
}
