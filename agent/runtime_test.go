package agent

import (
	"context"
	"testing"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// TestProbeRuntimeFails: a probe that did not end well says how, in the
// words of the run's verdict.
func TestProbeRuntimeFails(t *testing.T) {
	for _, tt := range []struct {
		res  sandbox.Result
		want string
	}{
		{sandbox.Result{ExitCode: 1, Stderr: []byte("Traceback (most recent call last):\nImportError: no json\n")},
			"agent: probe the sandbox's Python: exit 1: ImportError: no json"},
		{sandbox.Result{ExitCode: 137, Limit: sandbox.LimitTimeout},
			"agent: probe the sandbox's Python: timed out after 30s"},
		{sandbox.Result{ExitCode: 137, Limit: sandbox.LimitMemory},
			"agent: probe the sandbox's Python: killed at the memory limit of 512.0 MiB"},
	} {
		r := &fakeRunner{fn: func(context.Context, sandbox.Request) (*sandbox.Result, error) { res := tt.res; return &res, nil }}
		if _, err := ProbeRuntime(t.Context(), r); err == nil || err.Error() != tt.want {
			t.Errorf("ProbeRuntime = %v, want %q", err, tt.want)
		}
	}
}
