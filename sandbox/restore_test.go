package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The runner's restore, outside any sandbox: what a state may make a
// restore do. The local backend's tests (package local) run the same
// runner locked down.

// runnerPython is the interpreter these tests run the runner with; they
// are skipped without one.
func runnerPython(t *testing.T) string {
	t.Helper()
	p := os.Getenv("SANDPIPER_TEST_PYTHON")
	if p == "" {
		p = "/usr/bin/python3"
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no Python at %s", p)
	}
	return p
}

// runnerRun is one run of the runner.
type runnerRun struct {
	stdout, stderr string
	exit           int
	state          *StateResult
}

// runRunner runs code through [StateRunner] as a backend would, starting
// from state, with the state directory's bounds, unsandboxed.
func runRunner(t *testing.T, code string, state []byte, lim Limits) runnerRun {
	t.Helper()
	py := runnerPython(t)
	dir := t.TempDir()
	sd := filepath.Join(dir, "state")
	if err := os.Mkdir(sd, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sd, "max"), []byte(StateBounds(lim)), 0o600); err != nil {
		t.Fatal(err)
	}
	if state != nil {
		if err := os.WriteFile(filepath.Join(sd, "in"), state, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(t.Context(), py, "-c", StateRunner(sd), code)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "OPENBLAS_NUM_THREADS=1"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	r := runnerRun{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.exit = ee.ExitCode()
	case err != nil:
		t.Fatalf("run: %v", err)
	}
	report, _ := os.ReadFile(filepath.Join(sd, "report.json"))
	out, _ := os.ReadFile(filepath.Join(sd, "out"))
	r.state = ParseState(report, out)
	return r
}

// chain runs codes one after the other, each starting from the state the
// one before saved, and returns the last run.
func chain(t *testing.T, lim Limits, codes ...string) runnerRun {
	t.Helper()
	var state []byte
	var r runnerRun
	for i, c := range codes {
		r = runRunner(t, c, state, lim)
		if i < len(codes)-1 {
			if r.state.Data == nil {
				t.Fatalf("run %d saved nothing: %+v, stderr %q", i+1, r.state, r.stderr)
			}
			state = r.state.Data
		}
	}
	return r
}

// TestRestoreCallsNothing: a value whose pickle calls a function that is
// not a data constructor is not restored, and the report says why; the
// code runs, with the other names, whatever the value would have done
// (end the process, sleep, fill memory, patch builtins, run a shell).
func TestRestoreCallsNothing(t *testing.T) {
	for _, tc := range []struct {
		name, reduce string
		why          string
	}{
		{"os._exit", "import os\nreturn (os._exit, (0,))", "posix._exit is not restored"},
		{"time.sleep", "import time\nreturn (time.sleep, (3600,))", "time.sleep is not restored"},
		{"eval patching builtins", "return (eval, (\"__import__('builtins').__setattr__('sum', lambda *a: 7)\",))", "builtins.eval is not restored"},
		{"exec", "return (exec, ('import builtins; builtins.sum = lambda *a: 7',))", "builtins.exec is not restored"},
		{"getattr", "import builtins\nreturn (getattr, (builtins, 'sum'))", "getattr is not restored"},
		{"__import__", "return (__import__, ('os',))", "builtins.__import__ is not restored"},
		{"subprocess", "import subprocess\nreturn (subprocess.call, (['true'],))", "subprocess.call is not restored"},
		{"os.system", "import os\nreturn (os.system, ('echo pwned',))", "posix.system is not restored"},
		{"a class's code", "return (Bomb, ())", "would run code the conversation defined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plant := "x = 41\nclass Bomb:\n    def __init__(self):\n        import builtins\n        builtins.sum = lambda *a: 7\n    def __reduce__(self):\n" +
				indent(tc.reduce, "        ") + "\nb = object.__new__(Bomb)\ny = [1, 2]\n"
			r := chain(t, Limits{}, plant, "print(sum([1, 2, 3]), x + 1, y)")
			if r.stdout != "6 42 [1, 2]\n" || r.exit != 0 {
				t.Errorf("printed %q (exit %d, stderr %q), want 6 42 [1, 2]", r.stdout, r.exit, r.stderr)
			}
			st := r.state
			if len(st.NotRestored) != 1 || !strings.HasPrefix(st.NotRestored[0], "b (") || !strings.Contains(st.NotRestored[0], tc.why) {
				t.Errorf("not restored %q, want b (… %s …)", st.NotRestored, tc.why)
			}
			if !slices.Equal(st.Restored, []string{"x", "Bomb", "y"}) {
				t.Errorf("restored %q", st.Restored)
			}
			if st.RestoreFailed != "" {
				t.Errorf("restore failed: %s", st.RestoreFailed)
			}
		})
	}
}

func indent(s, by string) string {
	return by + strings.ReplaceAll(s, "\n", "\n"+by)
}

// TestRestoreChangesNothingOutside: a state crafted to change what is
// not its own while it is restored (builtins, a library's class) does not,
// and the value that tried is not restored.
func TestRestoreChangesNothingOutside(t *testing.T) {
	// b's record: BUILD on the builtins module (which a state refers to
	// through importlib.import_module, as a module saved by name is)
	// setting sum to int.
	crafted := craftState(t, map[string]string{
		"x": `pickle.dumps(1, 5)`,
		"b": `b"\x80\x02cimportlib\nimport_module\nX\x08\x00\x00\x00builtins\x85R}X\x03\x00\x00\x00sumcbuiltins\nint\nsb."`,
	})
	r := runRunner(t, "print(sum([1, 2, 3]), x)", crafted, Limits{})
	if r.stdout != "6 1\n" {
		t.Errorf("printed %q (stderr %q), want 6 1", r.stdout, r.stderr)
	}
	if len(r.state.NotRestored) != 1 || !strings.Contains(r.state.NotRestored[0], "changed builtins.sum") {
		t.Errorf("not restored %q", r.state.NotRestored)
	}
}

// craftState builds a state file from Python expressions giving each
// name's record.
func craftState(t *testing.T, records map[string]string) []byte {
	t.Helper()
	var b strings.Builder
	b.WriteString("import pickle, importlib, json, sys\nrecs = []\n")
	names := make([]string, 0, len(records))
	for n := range records {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		q, _ := json.Marshal(n)
		b.WriteString("recs.append((" + string(q) + ", " + records[n] + "))\n")
	}
	b.WriteString(`out = bytearray(b"SANDPIPER STATE 1\n")
index = []
for n, r in recs:
    index.append([n, len(out), len(r)])
    out += r
at = len(out)
out += json.dumps(index).encode() + at.to_bytes(8, "little")
sys.stdout.buffer.write(out)
`)
	out, err := exec.CommandContext(t.Context(), runnerPython(t), "-c", b.String()).Output()
	if err != nil {
		t.Fatalf("crafting a state: %v", err)
	}
	return out
}

// TestRestoreOutOfHarm: a restore that takes longer than half the run's
// time is stopped, the state is reported (RestoreFailed, to be set
// aside), and the code runs, without names, in the time left; one that
// would fill memory fails with MemoryError before the memory limit and
// loses that name alone.
func TestRestoreOutOfHarm(t *testing.T) {
	// 40,000 ints with the same hash: building the dict takes minutes.
	slow := craftState(t, map[string]string{
		"a": `pickle.dumps(1, 5)`,
		"d": `b"\x80\x02}(" + b"".join(pickle.dumps((2**61 - 1) * i, 2)[2:-1] + b"K\x00" for i in range(1, 40001)) + b"u."`,
	})
	start := time.Now()
	r := runRunner(t, "print('ran', 'a' in globals())\nz = 3", slow, Limits{Timeout: 4 * time.Second})
	if r.stdout != "ran False\n" || r.exit != 0 {
		t.Errorf("printed %q (exit %d, stderr %q), want the code to run without names", r.stdout, r.exit, r.stderr)
	}
	if st := r.state; !strings.Contains(st.RestoreFailed, "took longer than 2 s") || !slices.Equal(st.Kept, []string{"z"}) {
		t.Errorf("state %+v", st)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("the run took %v", d)
	}

	big := craftState(t, map[string]string{
		"a": `pickle.dumps(1, 5)`,
		"b": `b"\x80\x02cbuiltins\nbytearray\nJ\x00\x00\x00\x40\x85R."`,
	})
	r = runRunner(t, "print('ran', a)", big, Limits{Memory: 256 << 20})
	if r.stdout != "ran 1\n" || r.exit != 0 {
		t.Errorf("printed %q (exit %d, stderr %q)", r.stdout, r.exit, r.stderr)
	}
	if st := r.state; len(st.NotRestored) != 1 || !strings.HasPrefix(st.NotRestored[0], "b (MemoryError") || st.RestoreFailed != "" {
		t.Errorf("state %+v", st)
	}
}
