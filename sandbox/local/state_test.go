//go:build linux && cgo && (amd64 || arm64)

package local

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// runState runs code keeping state, starting from state, and fails the
// test unless the run reported on its state.
func runState(t *testing.T, s *Sandbox, code string, state []byte, lim sandbox.Limits) *sandbox.Result {
	t.Helper()
	warm := s.alwaysWarm && awaitWarm(t, s, lim)
	res, err := s.Run(t.Context(), sandbox.Request{Code: code, Limits: lim, KeepState: true, State: state})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if warm && !res.Warm {
		t.Errorf("the run started cold; want it warm")
	}
	if res.State == nil {
		t.Fatalf("no state in the result of a run that keeps state; stderr %q", res.Stderr)
	}
	return res
}

// TestStateCarriesNames: the names a run leaves are there in the next
// run, warm and cold, whatever sandbox the next run gets; what cannot be
// saved is named with why.
func TestStateCarriesNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    *Sandbox
	}{{"warm", newTestSandbox(t)}, {"cold", coldSandbox(t)}} {
		t.Run(tc.name, func(t *testing.T) {
			first := runState(t, tc.s, `import json
x = 41
def f(n):
    return n + x
class Point:
    def __init__(self, a, b):
        self.a, self.b = a, b
    def total(self):
        return self.a + self.b
p = Point(1, 2)
alias = p
gen = (i for i in range(3))
fh = open("notes.txt", "w")
print("first")`, nil, sandbox.Limits{})
			st := first.State
			if first.ExitCode != 0 || st.Data == nil {
				t.Fatalf("first run: exit %d, stderr %q, state %+v", first.ExitCode, first.Stderr, st)
			}
			if want := []string{"json", "x", "f", "Point", "p", "alias"}; !slices.Equal(st.Kept, want) {
				t.Errorf("kept %v, want %v", st.Kept, want)
			}
			if len(st.Dropped) != 2 || !strings.HasPrefix(st.Dropped[0], "gen (cannot pickle 'generator' object") || !strings.HasPrefix(st.Dropped[1], "fh (cannot pickle '_io.TextIOWrapper'") {
				t.Errorf("dropped %q", st.Dropped)
			}
			if got := names(first.Files); !slices.Equal(got, []string{"notes.txt=0"}) {
				t.Errorf("files %v, want the program's only", got)
			}
			second := runState(t, tc.s, `print(x + 1, f(1), p.total(), alias is p, json.dumps([1]), "gen" in globals())`, st.Data, sandbox.Limits{})
			if got, want := string(second.Stdout), "42 42 3 True [1] False\n"; got != want || second.ExitCode != 0 {
				t.Errorf("second run printed %q (exit %d, stderr %q), want %q", got, second.ExitCode, second.Stderr, want)
			}
			if got := second.State.Restored; !slices.Equal(got, []string{"json", "x", "f", "Point", "p", "alias"}) {
				t.Errorf("restored %v", got)
			}
		})
	}
}

// TestStateLikeCold: a run that keeps state (and starts with none) runs
// its code as python3 -c does: output, tracebacks and exit codes are the
// same, warm and cold.
func TestStateLikeCold(t *testing.T) {
	shared, cold := newTestSandbox(t), coldSandbox(t)
	for _, tc := range []struct{ name, code string }{
		{"NameError on line 3", "x = 1\ny = 2\nprint(undefined_name)"},
		{"SyntaxError", "print('a')\nx = (\n"},
		{"SystemExit with a code", "import sys\nprint('before')\nsys.exit(3)"},
		{"error in a function", "def f():\n    return 1 / 0\n\nf()"},
		{"chained exceptions", "def f():\n    raise ValueError('in f')\ntry:\n    f()\nexcept ValueError as e:\n    raise RuntimeError('wrapped') from e"},
		{"KeyboardInterrupt", "print('x', flush=True)\nraise KeyboardInterrupt"},
		{"the program's own excepthook", "import sys\ndef hook(t, v, tb):\n    print('hook', t.__name__, tb.tb_frame.f_code.co_filename, tb.tb_lineno, tb.tb_next)\nsys.excepthook = hook\nraise ValueError(1)"},
		{"atexit after an error", "import atexit, sys\natexit.register(lambda: print('atexit', sys.last_type.__name__, sys.last_traceback.tb_lineno))\n\n1/0"},
		{"what the program sees", "import os, sys\nprint(__name__, sys.argv, repr(sys.path[0]), os.getcwd(), repr(sys.stdin.read()), sys.orig_argv[1], sys.orig_argv[2].startswith('import os, sys'))"},
		{"descriptors", "import os\nprint(sorted(os.listdir('/proc/self/fd')))"},
		{"os._exit", "import os\nprint('bye', flush=True)\nos._exit(7)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plain := run(t, cold, tc.code, sandbox.Limits{})
			for _, s := range []*Sandbox{shared, cold} {
				got := runState(t, s, tc.code, nil, sandbox.Limits{})
				if !bytes.Equal(got.Stdout, plain.Stdout) || !bytes.Equal(got.Stderr, plain.Stderr) || got.ExitCode != plain.ExitCode {
					t.Errorf("keeping state (warm %v): exit %d\nstdout %q\nstderr %q\nplain: exit %d\nstdout %q\nstderr %q",
						got.Warm, got.ExitCode, got.Stdout, got.Stderr, plain.ExitCode, plain.Stdout, plain.Stderr)
				}
			}
		})
	}
}

// TestStateLimits: a value past the state's limit is dropped with why and
// the rest kept; a run stopped by its time or memory limit saves nothing
// (the state before it stands); an error in the code saves what the code
// left until then.
func TestStateLimits(t *testing.T) {
	s := newTestSandbox(t)
	small := sandbox.Limits{StateSize: 64 << 10}
	res := runState(t, s, "big = b'x' * 200_000\nsmall = 7", nil, small)
	if st := res.State; st.Data == nil || !slices.Equal(st.Kept, []string{"small"}) ||
		len(st.Dropped) != 1 || !strings.HasPrefix(st.Dropped[0], "big (too large: the state would pass its limit of 64 KiB") {
		t.Fatalf("state %+v", st)
	}
	if n := len(res.State.Data); n > 64<<10 {
		t.Errorf("a state of %d bytes under a limit of 64 KiB", n)
	}
	before := res.State.Data

	res = runState(t, s, "small = 8\nimport time\ntime.sleep(5)", before, sandbox.Limits{Timeout: time.Second})
	if res.Limit != sandbox.LimitTimeout || res.State.Data != nil || res.State.Unsaved == "" {
		t.Errorf("timed out: limit %q, state %+v", res.Limit, res.State)
	}
	if got := res.State.Restored; !slices.Equal(got, []string{"small"}) {
		t.Errorf("restored %v before the timeout", got)
	}

	res = runState(t, s, "small = 9\nx = 1 / 0", before, sandbox.Limits{})
	if res.ExitCode != 1 || res.State.Data == nil || !slices.Equal(res.State.Kept, []string{"small"}) {
		t.Fatalf("after an error: exit %d, state %+v", res.ExitCode, res.State)
	}
	res = runState(t, s, "print(small)", res.State.Data, sandbox.Limits{})
	if string(res.Stdout) != "9\n" {
		t.Errorf("after an error, the next run printed %q, want 9", res.Stdout)
	}

	// The program cannot grow the state's directory past the limit
	// either: it is a tmpfs of that size.
	res = runState(t, s, `import os
try:
    with open("/tmp/.sandpiper-state/junk", "wb") as f:
        f.write(b"x" * (4 << 20))
    print("wrote")
except OSError as e:
    print(e.strerror)`, nil, sandbox.Limits{StateSize: 1 << 20})
	if got := string(res.Stdout); got != "No space left on device\n" {
		t.Errorf("writing past the state's room: %q", got)
	}
}

// TestStateMemoryKill: a run the memory limit kills saves nothing.
func TestStateMemoryKill(t *testing.T) {
	s := newTestSandbox(t)
	res := runState(t, s, "x = 1\nb = bytearray(1 << 30)", nil, sandbox.Limits{Memory: 256 << 20})
	if res.Limit != sandbox.LimitMemory || res.State.Data != nil {
		t.Errorf("killed at the memory limit: limit %q, state %+v", res.Limit, res.State)
	}
}

// TestStateUnreadable: a damaged state is reported unreadable, and the
// run goes on without names.
func TestStateUnreadable(t *testing.T) {
	s := newTestSandbox(t)
	for _, state := range [][]byte{[]byte("not a state"), []byte("SANDPIPER STATE 1\n\x00\x00\x00\x00\x00\x00\x00\x00")} {
		res := runState(t, s, "print('ran')\ny = 2", state, sandbox.Limits{})
		if string(res.Stdout) != "ran\n" || res.ExitCode != 0 {
			t.Errorf("printed %q, exit %d, stderr %q", res.Stdout, res.ExitCode, res.Stderr)
		}
		if st := res.State; st.Unreadable == "" || st.Data == nil || !slices.Equal(st.Kept, []string{"y"}) {
			t.Errorf("state %+v", st)
		}
	}
}

// TestStateDataFrame: a DataFrame and the imports come back, in a warm
// sandbox and a cold one.
func TestStateDataFrame(t *testing.T) {
	warm, cold := newDataSandboxes(t)
	res := runState(t, warm, "import pandas as pd, numpy as np\ndf = pd.DataFrame({'a': np.arange(5), 'b': list('vwxyz')})\nx = 41", nil, sandbox.Limits{})
	if res.State.Data == nil {
		t.Fatalf("state %+v, stderr %q", res.State, res.Stderr)
	}
	for _, s := range []*Sandbox{warm, cold} {
		got := runState(t, s, "print(x + 1, df.shape, df.b.iloc[-1], pd.__name__, np.__name__)", res.State.Data, sandbox.Limits{})
		if string(got.Stdout) != "42 (5, 2) z pandas numpy\n" {
			t.Errorf("warm %v: printed %q, stderr %q", got.Warm, got.Stdout, got.Stderr)
		}
	}
}

// TestOneShotKeepsNoState: sandpiper exec's sandbox refuses a run that
// keeps state.
func TestOneShotKeepsNoState(t *testing.T) {
	s, err := New(t.Context(), Config{Python: testPython(), OneShot: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Run(t.Context(), sandbox.Request{Code: "x = 1", KeepState: true}); err == nil || !strings.Contains(err.Error(), "keeps no state") {
		t.Errorf("err = %v", err)
	}
}

// TestStateKinds: what a notebook's namespace holds comes back as it
// was: functions (recursive, closures, lambdas, decorated, cached),
// classes (subclasses calling super, slots, dataclasses, ABCs) and their
// instances, shared values, modules; what cannot be saved is named.
func TestStateKinds(t *testing.T) {
	s := newTestSandbox(t)
	first := runState(t, s, `import abc, dataclasses, enum, functools, math, os.path, threading
from dataclasses import dataclass, field
def fact(n):
    return 1 if n < 2 else n * fact(n - 1)
def outer():
    k = 10
    def inner(z):
        return z + k
    return inner
add10 = outer()
sq = lambda v: v * v
@functools.lru_cache(maxsize=None)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
inc = functools.partial(lambda a, b: a + b, 1)
class Shape(abc.ABC):
    @abc.abstractmethod
    def area(self): ...
class Square(Shape):
    __slots__ = ("side",)
    def __init__(self, side):
        self.side = side
    def area(self):
        return self.side ** 2
class Double(Square):
    def area(self):
        return 2 * super().area()
@dataclass
class Point:
    x: int
    tags: list = field(default_factory=list)
shapes = [Square(3), Double(3)]
first_shape = shapes[0]
p = Point(1)
join = os.path.join
class Color(enum.Enum):
    RED = 1
lock = threading.Lock()
print("defined")`, nil, sandbox.Limits{})
	st := first.State
	if first.ExitCode != 0 || st.Data == nil {
		t.Fatalf("exit %d, stderr %q, state %+v", first.ExitCode, first.Stderr, st)
	}
	if want := []string{"Color (the class Color has the metaclass EnumType, which cannot be saved)", "lock (cannot pickle '_thread.lock' object)"}; !slices.Equal(st.Dropped, want) {
		t.Errorf("dropped %q, want %q", st.Dropped, want)
	}
	second := runState(t, s, `print(fact(5), add10(1), sq(4), fib(40), inc(41))
print([s.area() for s in shapes], first_shape is shapes[0], isinstance(shapes[1], Shape), Square.__slots__)
print(p, Point(2, ['a']), dataclasses.asdict(p), dataclasses.replace(p, x=3), [f.name for f in dataclasses.fields(Point)])
print(join("a", "b"), math.pi > 3)`, st.Data, sandbox.Limits{})
	want := `120 11 16 102334155 42
[9, 18] True True ('side',)
Point(x=1, tags=[]) Point(x=2, tags=['a']) {'x': 1, 'tags': []} Point(x=3, tags=[]) ['x', 'tags']
a/b True
`
	if got := string(second.Stdout); got != want || len(second.State.NotRestored) > 0 {
		t.Errorf("printed %q (stderr %q, not restored %q), want %q", got, second.Stderr, second.State.NotRestored, want)
	}
}

// TestStateConstants: the Go side and the C side agree on where the state
// is and how long its report may be.
func TestStateConstants(t *testing.T) {
	if stateDir != cStateDir || sandbox.MaxStateReport != cStateRep {
		t.Errorf("Go: %s, %d; C: %s, %d", stateDir, sandbox.MaxStateReport, cStateDir, cStateRep)
	}
}

// TestStatePlanted: a value a run leaves so that restoring it ends the
// process, sleeps, fills memory or patches builtins does none of that in
// the thread's next runs: it is not restored, the report says why, and
// the code runs with the other names, warm and cold.
func TestStatePlanted(t *testing.T) {
	sandboxes := []struct {
		name string
		s    *Sandbox
	}{{"warm", newTestSandbox(t)}, {"cold", coldSandbox(t)}}
	for _, tc := range []struct{ name, reduce, why string }{
		{"exit", "import os\n        return (os._exit, (0,))", "posix._exit is not called while restoring"},
		{"sleep", "import time\n        return (time.sleep, (3600,))", "time.sleep is not called while restoring"},
		{"1 GiB", "return (bytearray, (1 << 30,))", "MemoryError"},
		{"builtins patch", "return (eval, (\"__import__('builtins').__setattr__('sum', lambda *a: 7)\",))", "builtins.eval is not called while restoring"},
	} {
		for _, sb := range sandboxes {
			s := sb.s
			t.Run(tc.name+"/"+sb.name, func(t *testing.T) {
				plant := "x = 41\nclass Bomb:\n    def __reduce__(self):\n        " + tc.reduce + "\nb = Bomb()"
				res := runState(t, s, plant, nil, sandbox.Limits{})
				if res.State.Data == nil {
					t.Fatalf("planting saved nothing: %+v", res.State)
				}
				state := res.State.Data
				for range 2 { // and the state it saves
					res = runState(t, s, "print(sum([1, 2, 3]), x + 1)", state, sandbox.Limits{Timeout: 10 * time.Second})
					st := res.State
					if string(res.Stdout) != "6 42\n" || res.ExitCode != 0 || res.Limit != sandbox.LimitNone {
						t.Errorf("printed %q (exit %d, limit %q, stderr %q), want 6 42", res.Stdout, res.ExitCode, res.Limit, res.Stderr)
					}
					if len(st.NotRestored) > 0 && (!strings.HasPrefix(st.NotRestored[0], "b (") || !strings.Contains(st.NotRestored[0], tc.why)) {
						t.Errorf("not restored %q, want b (… %s …)", st.NotRestored, tc.why)
					}
					if st.Data == nil || slices.Contains(st.Kept, "b") {
						t.Fatalf("state %+v", st)
					}
					state = st.Data
				}
			})
		}
	}
}

// TestStateRestoreHangs: a state whose restore takes longer than half the
// run's time (a dict of keys that share a hash) is reported
// (RestoreFailed, set aside by the front end); the code runs without
// names in the time left, and its names are saved.
func TestStateRestoreHangs(t *testing.T) {
	s := newTestSandbox(t)
	var rec bytes.Buffer
	rec.WriteString("\x80\x02}(")
	m := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 61), big.NewInt(1))
	for i := int64(1); i <= 40000; i++ {
		b := new(big.Int).Mul(m, big.NewInt(i)).Bytes() // big-endian, positive
		slices.Reverse(b)
		if b[len(b)-1]&0x80 != 0 {
			b = append(b, 0)
		}
		rec.WriteString("\x8a" + string(rune(len(b))) + string(b) + "K\x00")
	}
	rec.WriteString("u.")
	state := stateFile(map[string][]byte{"d": rec.Bytes(), "a": []byte("\x80\x02K\x01.")})
	start := time.Now()
	res := runState(t, s, "print('ran', 'a' in globals())\nz = 3", state, sandbox.Limits{Timeout: 6 * time.Second})
	if string(res.Stdout) != "ran False\n" || res.ExitCode != 0 || res.Limit != sandbox.LimitNone {
		t.Errorf("printed %q (exit %d, limit %q, stderr %q)", res.Stdout, res.ExitCode, res.Limit, res.Stderr)
	}
	if st := res.State; !strings.Contains(st.RestoreFailed, "restoring them took") || !slices.Equal(st.Kept, []string{"z"}) {
		t.Errorf("state %+v", st)
	}
	t.Logf("the run took %v", time.Since(start))
}

// stateFile builds a state file (state.py's format) from the names'
// records, in name order.
func stateFile(records map[string][]byte) []byte {
	out := []byte("SANDPIPER STATE 1\n")
	var index [][]any
	for _, n := range slices.Sorted(maps.Keys(records)) {
		index = append(index, []any{n, len(out), len(records[n])})
		out = append(out, records[n]...)
	}
	at := len(out)
	j, _ := json.Marshal(index)
	out = append(out, j...)
	return binary.LittleEndian.AppendUint64(out, uint64(at))
}

// TestStateLargerThanDisk: the state's own limit bounds it, not the disk
// limit: a value past the disk limit is kept and comes back.
func TestStateLargerThanDisk(t *testing.T) {
	s := newTestSandbox(t)
	lim := sandbox.Limits{DiskSize: 8 << 20, StateSize: 48 << 20, Memory: 256 << 20}
	res := runState(t, s, "b = bytes(range(256)) * (40 << 12)\nprint(len(b))", nil, lim)
	if res.State.Data == nil || !slices.Equal(res.State.Kept, []string{"b"}) {
		t.Fatalf("state %+v (stderr %q)", res.State, res.Stderr)
	}
	// Streamed, as the bot gives it.
	res, err := s.Run(t.Context(), sandbox.Request{Code: "print(len(b), b[257])\nopen('f', 'wb').write(bytes(9 << 20))", Limits: lim,
		KeepState: true, StateFrom: bytes.NewReader(res.State.Data), StateLen: int64(len(res.State.Data))})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Stdout) != "41943040 1\n" || res.Limit != sandbox.LimitDisk {
		t.Errorf("printed %q (limit %q, stderr %q), want the value back and the disk limit for the program's own file", res.Stdout, res.Limit, res.Stderr)
	}
}

// TestStateAtItsLimit: with the default limits, a value just within the
// state's default limit is kept and restored, warm and cold (the
// documented cap is the real one: neither the disk limit nor the memory
// limit comes first).
func TestStateAtItsLimit(t *testing.T) {
	for _, s := range []*Sandbox{newTestSandbox(t), coldSandbox(t)} {
		code := fmt.Sprintf("b = bytes(%d)\nprint(len(b))", sandbox.DefaultStateSize-2<<20)
		res := runState(t, s, code, nil, sandbox.Limits{})
		if res.State.Data == nil || !slices.Equal(res.State.Kept, []string{"b"}) {
			t.Fatalf("warm %v: state %+v, limit %q, stderr %q", res.Warm, res.State, res.Limit, res.Stderr)
		}
		res = runState(t, s, "print(len(b))\nc = 1", res.State.Data, sandbox.Limits{})
		if want := fmt.Sprintf("%d\n", sandbox.DefaultStateSize-2<<20); string(res.Stdout) != want || !slices.Equal(res.State.Kept, []string{"b", "c"}) {
			t.Errorf("warm %v: printed %q (limit %q, stderr %q), state %+v", res.Warm, res.Stdout, res.Limit, res.Stderr, res.State)
		}
	}
}
