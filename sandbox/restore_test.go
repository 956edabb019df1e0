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
		{"os._exit", "import os\nreturn (os._exit, (0,))", "posix._exit is not called while restoring"},
		{"time.sleep", "import time\nreturn (time.sleep, (3600,))", "time.sleep is not called while restoring"},
		{"eval patching builtins", "return (eval, (\"__import__('builtins').__setattr__('sum', lambda *a: 7)\",))", "builtins.eval is not called while restoring"},
		{"exec", "return (exec, ('import builtins; builtins.sum = lambda *a: 7',))", "builtins.exec is not called while restoring"},
		{"getattr", "import builtins\nreturn (getattr, (builtins, 'sum'))", "getattr is not restored"},
		{"__import__", "return (__import__, ('os',))", "builtins.__import__ is not called while restoring"},
		{"subprocess", "import subprocess\nreturn (subprocess.call, (['true'],))", "subprocess.call is not called while restoring"},
		{"os.system", "import os\nreturn (os.system, ('echo pwned',))", "posix.system is not called while restoring"},
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

	// A name bound to os.system (from os import system) comes back, but a
	// value calling it through a reference to that name is refused.
	crafted = craftState(t, map[string]string{
		"a": `b"\x80\x02cposix\nsystem\n."`,
		"b": `b"\x80\x02X\x01\x00\x00\x00aQX\x0a\x00\x00\x00echo pwned\x85R."`,
	})
	r = runRunner(t, "print(a.__name__)", crafted, Limits{})
	if r.stdout != "system\n" || len(r.state.NotRestored) != 1 || !strings.Contains(r.state.NotRestored[0], "posix.system is not called while restoring") {
		t.Errorf("printed %q (stderr %q), not restored %q", r.stdout, r.stderr, r.state.NotRestored)
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

// TestRestoreOutOfHarm: a restore that takes more CPU than half the
// run's time is stopped, the state is reported (RestoreFailed, to be set
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
	if st := r.state; !strings.Contains(st.RestoreFailed, "restoring them took") || !slices.Equal(st.Kept, []string{"z"}) {
		t.Errorf("state %+v", st)
	}
	t.Logf("the run took %v", time.Since(start))

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

// TestRestoreKeepsData: what a data conversation keeps comes back
// whole through the restore's rules: pandas and numpy values of every
// kind, the standard library's data types, names bound to modules'
// functions, the conversation's functions and classes.
func TestRestoreKeepsData(t *testing.T) {
	if err := exec.Command(runnerPython(t), "-c", "import numpy, pandas").Run(); err != nil {
		t.Skip("no numpy and pandas")
	}
	plant := `import numpy as np, pandas as pd, datetime, decimal, fractions, collections, pathlib, uuid, re, math, enum, typing, array, statistics, types
from math import sqrt
from collections import Counter
from statistics import mean
df = pd.DataFrame({"a": np.arange(4), "s": list("wxyz"), "t": pd.date_range("2024-01-01", periods=4, tz="Europe/Paris"),
    "c": pd.Categorical(list("pqpq")), "i": pd.array([1, None, 3, 4], dtype="Int64"), "f": [0.5, np.nan, 1.5, 2.5]})
mi = pd.MultiIndex.from_tuples([(1, "a"), (2, "b")])
s = pd.Series([1.5, 2.5], index=pd.Index(["x", "y"], name="k"))
per = pd.period_range("2024-01", periods=3, freq="M")
iv = pd.Interval(0, 1)
ts, td, na, nat = pd.Timestamp("2024-05-01 12:00", tz="UTC"), pd.Timedelta("1h"), pd.NA, pd.NaT
arr = np.arange(12, dtype=np.float32).reshape(3, 4)
rec = np.zeros(2, dtype=[("x", "i4"), ("y", "f8")])
ma = np.ma.array([1, 2, 3], mask=[0, 1, 0])
obj = np.array([1, "a", None], dtype=object)
rng = np.random.default_rng(7)
first = rng.random()
sc, dt64 = np.float64(2.5), np.datetime64("2024-01-01")
when = datetime.datetime(2024, 1, 2, 3, 4, tzinfo=datetime.timezone.utc)
day, dur = datetime.date(2024, 1, 2), datetime.timedelta(days=3)
dec, frac, cplx = decimal.Decimal("1.10"), fractions.Fraction(2, 3), 1 + 2j
od, dd, dq, cnt = collections.OrderedDict(a=1), collections.defaultdict(list, {"k": [1]}), collections.deque([1, 2], maxlen=5), Counter("aab")
path, uid, pat = pathlib.PurePosixPath("/mnt/data/x.csv"), uuid.UUID(int=5), re.compile(r"a+b", re.I)
flag = re.IGNORECASE
nums = array.array("d", [1.0, 2.0])
nd = statistics.NormalDist(0, 1)
ns = types.SimpleNamespace(a=1)
sets, fsets, byts, ba, rg, sl = {1, 2}, frozenset({3}), b"x", bytearray(b"y"), range(3), slice(1, 5, 2)
err = ValueError("bad")
agg = {"mean": mean, "sqrt": sqrt, "max": max}
def scale(v, k=2):
    return v * k
class Acc:
    def __init__(self):
        self.total = 0
    def add(self, v):
        self.total += v
        return self
acc = Acc().add(5)
`
	check := `import numpy as np, pandas as pd
assert df.dtypes.astype(str).tolist() == ["int64", "object", "datetime64[ns, Europe/Paris]", "category", "Int64", "float64"], df.dtypes
assert df.i.isna().tolist() == [False, True, False, False] and str(df.t.iloc[0]) == "2024-01-01 00:00:00+01:00"
assert mi.tolist() == [(1, "a"), (2, "b")] and s.index.name == "k" and str(per[2]) == "2024-03" and iv.right == 1
assert str(ts) == "2024-05-01 12:00:00+00:00" and td.total_seconds() == 3600 and na is pd.NA and nat is pd.NaT
assert arr.shape == (3, 4) and arr.dtype == np.float32 and rec.dtype.names == ("x", "y") and ma.mask.tolist() == [False, True, False]
assert obj.tolist() == [1, "a", None] and sc == 2.5 and str(dt64) == "2024-01-01"
r2 = np.random.default_rng(7); r2.random()
assert rng.random() == r2.random()
assert when.tzinfo is not None and day.year == 2024 and dur.days == 3 and str(dec) == "1.10" and frac * 3 == 2 and cplx.imag == 2
assert od == {"a": 1} and dd["new"] == [] and dq.maxlen == 5 and cnt["a"] == 2
assert str(path) == "/mnt/data/x.csv" and uid.int == 5 and pat.match("AAB") and flag == re.IGNORECASE
assert nums.tolist() == [1.0, 2.0] and nd.mean == 0 and ns.a == 1 and sets == {1, 2} and fsets == {3}
assert (byts, ba, list(rg), sl.step) == (b"x", bytearray(b"y"), [0, 1, 2], 2) and str(err) == "bad"
assert agg["mean"]([1, 3]) == 2 and agg["sqrt"](9) == 3 and sqrt(4) == 2 and agg["max"](1, 2) == 2
assert scale(3) == 6 and acc.add(1).total == 6 and Counter("x")["x"] == 1
print("ok", sum([1, 2, 3]))`
	r := chain(t, Limits{}, plant, check)
	if r.stdout != "ok 6\n" || r.exit != 0 {
		t.Errorf("printed %q (exit %d), stderr %s", r.stdout, r.exit, r.stderr)
	}
	if len(r.state.NotRestored) > 0 || r.state.RestoreFailed != "" {
		t.Errorf("not restored %q, failed %q", r.state.NotRestored, r.state.RestoreFailed)
	}
}

// TestRestoreEndsAsTheCode: a run that restores a state (the code runs in
// a child of the program's process) ends as the code does: its exit
// status, SystemExit's code, os._exit, death by SIGINT after a
// KeyboardInterrupt; and its output is the code's alone.
func TestRestoreEndsAsTheCode(t *testing.T) {
	state := runRunner(t, "x = 1", nil, Limits{}).state.Data
	for _, tc := range []struct {
		code, stdout string
		exit         int
	}{
		{"print(x)", "1\n", 0},
		{"import sys\nprint(x)\nsys.exit(3)", "1\n", 3},
		{"print(x, flush=True)\n1/0", "1\n", 1},
		{"import os\nprint(x, flush=True)\nos._exit(7)", "1\n", 7},
		{"print(x, flush=True)\nraise KeyboardInterrupt", "1\n", -1}, // killed by SIGINT
	} {
		r := runRunner(t, tc.code, state, Limits{})
		if r.stdout != tc.stdout || r.exit != tc.exit {
			t.Errorf("%q: printed %q, exit %d (stderr %q); want %q, %d", tc.code, r.stdout, r.exit, r.stderr, tc.stdout, tc.exit)
		}
	}
}
