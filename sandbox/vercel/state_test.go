package vercel

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// TestState: the state travels with the workspace's files: a run's names
// are there in the next run (a new VM), the state's files stay out of
// the run's files, and a run stopped at its timeout saves nothing.
func TestState(t *testing.T) {
	f := newFake(t)
	s, _ := newTestSandbox(t, f, Config{})
	run := func(code string, state []byte, lim sandbox.Limits) *sandbox.Result {
		t.Helper()
		res, err := s.Run(t.Context(), sandbox.Request{Code: code, KeepState: true, State: state, Limits: lim,
			Files: []sandbox.File{{Name: "in.txt", Data: []byte("input")}}})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if res.State == nil {
			t.Fatal("no state in the result")
		}
		return res
	}
	first := run("import os\nx = 41\ndef f(n):\n    return n + x\ng = (i for i in [1])\nos.chdir('/')\nopen('/tmp/x', 'w')", nil, sandbox.Limits{})
	if st := first.State; st.Data == nil || !slices.Equal(st.Kept, []string{"os", "x", "f"}) || len(st.Dropped) != 1 || !strings.HasPrefix(st.Dropped[0], "g (") {
		t.Fatalf("first run: exit %d, stderr %q, state %+v", first.ExitCode, first.Stderr, st)
	}
	if len(first.Files) != 0 {
		t.Errorf("files %v, want none", first.Files)
	}
	second := run("print(f(1), os.path.basename(os.getcwd()))", first.State.Data, sandbox.Limits{})
	if got := string(second.Stdout); got != "42 data\n" || !slices.Equal(second.State.Restored, []string{"os", "x", "f"}) {
		t.Errorf("second run printed %q (stderr %q), state %+v", got, second.Stderr, second.State)
	}
	stopped := run("x = 1\nimport time\ntime.sleep(30)", first.State.Data, sandbox.Limits{Timeout: 3 * time.Second})
	if stopped.Limit != sandbox.LimitTimeout || stopped.State.Data != nil || stopped.State.Unsaved == "" {
		t.Errorf("timed out: limit %q, state %+v", stopped.Limit, stopped.State)
	}
}
