//go:build linux && cgo && (amd64 || arm64)

package local

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

var (
	dataOnce           sync.Once
	dataWarm, dataCold *Sandbox
	dataErr            error
)

func hasDataStack() bool {
	return exec.Command(testPython(), "-c", "import numpy, pandas, matplotlib.pyplot").Run() == nil
}

// newDataSandboxes returns two sandboxes shared by the warm tests: one
// preloading numpy, pandas and matplotlib.pyplot (DefaultPreload), whose
// runs are all warm, and one without, to compare with. Both prepare
// matplotlib's font cache, as the bot does.
func newDataSandboxes(t *testing.T) (warm, cold *Sandbox) {
	t.Helper()
	if !hasDataStack() {
		t.Skip("numpy, pandas and matplotlib are not installed for " + testPython())
	}
	dataOnce.Do(func() {
		ctx := context.Background()
		if dataWarm, dataErr = New(ctx, Config{Python: testPython(), Concurrency: 1, PrepareCaches: true, Preload: DefaultPreload}); dataErr != nil {
			return
		}
		if dataCold, dataErr = New(ctx, Config{Python: testPython(), Concurrency: 1, PrepareCaches: true}); dataErr != nil {
			return
		}
		<-dataWarm.cachesDone
		<-dataCold.cachesDone
		alwaysWarm(dataWarm)
	})
	if dataErr != nil {
		t.Fatalf("New: %v", dataErr)
	}
	return dataWarm, dataCold
}

// warmSandbox returns the sandbox preloading the data stack, or without
// one the shared sandbox.
func warmSandbox(t *testing.T) *Sandbox {
	if hasDataStack() {
		s, _ := newDataSandboxes(t)
		return s
	}
	return newTestSandbox(t)
}

// TestWarmRunsShareNothing: a warm run changes the preloaded modules, a
// standard library module, builtins and sys.modules, leaves files and a
// process behind; the next warm run sees none of it.
func TestWarmRunsShareNothing(t *testing.T) {
	s := warmSandbox(t)
	checkWarmShareNothing(t, s)
}

func checkWarmShareNothing(t *testing.T, s *Sandbox) {
	mods := pyList(s.preload)
	first := `import builtins, json, os, sys, time
for name in ` + mods + `:
    sys.modules[name].__dict__["x"] = 1
if "pandas" in sys.modules:
    sys.modules["pandas"].DataFrame.sum = lambda self, *a, **k: "patched"
if "numpy" in sys.modules:
    sys.modules["numpy"].pi = 3
    sys.modules["numpy"].random.seed(42)
builtins.leaked = 1
sys.modules["leaked_module"] = sys
json.dumps = None
open("/tmp/mark", "w").write("1")
open("/mnt/data/mark", "w").write("1")
if os.fork() == 0:
    os.setsid()
    time.sleep(60)
    os._exit(0)
print("changed")`
	res := run(t, s, first, sandbox.Limits{})
	if string(res.Stdout) != "changed\n" || !res.Warm {
		t.Fatalf("first run: warm %v, stdout %q, stderr %q", res.Warm, res.Stdout, res.Stderr)
	}
	second := `import builtins, json, os, sys
seen = []
for name in ` + mods + `:
    if "x" in sys.modules[name].__dict__:
        seen.append(name + ".x")
if "pandas" in sys.modules and sys.modules["pandas"].DataFrame({"a": [1, 2]}).sum()["a"] != 3:
    seen.append("pandas.DataFrame.sum")
if "numpy" in sys.modules:
    np = sys.modules["numpy"]
    if np.pi != 3.141592653589793:
        seen.append("numpy.pi")
    np.random.seed(42)
    a = np.random.rand()
    np.random.seed()
    if np.random.rand() == a:
        seen.append("numpy.random state")
if hasattr(builtins, "leaked"):
    seen.append("builtins.leaked")
if "leaked_module" in sys.modules:
    seen.append("sys.modules")
if json.dumps is None:
    seen.append("json.dumps")
for p in ("/tmp/mark", "/mnt/data/mark"):
    if os.path.exists(p):
        seen.append(p)
pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
if pids != [1, os.getpid()]:
    seen.append("processes %s" % pids)
print(seen or "nothing")`
	res = run(t, s, second, sandbox.Limits{})
	if string(res.Stdout) != "nothing\n" || !res.Warm {
		t.Errorf("second run: warm %v, saw %q, stderr %q", res.Warm, res.Stdout, res.Stderr)
	}
}

// TestWarmRunsDiffer: the random numbers, UUIDs and string hashes of two
// warm runs differ.
func TestWarmRunsDiffer(t *testing.T) {
	s := warmSandbox(t)
	checkWarmRunsDiffer(t, s)
}

func checkWarmRunsDiffer(t *testing.T, s *Sandbox) {
	code := `import random, sys, uuid
print(random.random())
print(sys.modules["numpy"].random.rand() if "numpy" in sys.modules else random.random())
print(uuid.uuid4())
print(uuid.uuid1().clock_seq)
print(hash("abc"))`
	var outs [][]string
	for range 2 {
		res := run(t, s, code, sandbox.Limits{})
		if res.ExitCode != 0 || !res.Warm {
			t.Fatalf("warm %v, exit %d, stderr %q", res.Warm, res.ExitCode, res.Stderr)
		}
		outs = append(outs, strings.Fields(string(res.Stdout)))
	}
	names := []string{"random.random()", "numpy.random.rand()", "uuid.uuid4()", "uuid.uuid1().clock_seq", `hash("abc")`}
	if len(outs[0]) != len(names) || len(outs[1]) != len(names) {
		t.Fatalf("outputs %q", outs)
	}
	for i, n := range names {
		if outs[0][i] == outs[1][i] {
			t.Errorf("%s is %s in both runs", n, outs[0][i])
		}
	}
}

// TestWarmLikeCold runs programs warm and cold: stdout, stderr and the exit
// code must be the same, as for python3 -c. Those that use the data stack
// run warm with it preloaded; the others in the shared sandbox (numpy
// preloaded: a shorter warm-up).
func TestWarmLikeCold(t *testing.T) {
	shared, cold := newTestSandbox(t), coldSandbox(t)
	var data *Sandbox
	if hasDataStack() {
		data, _ = newDataSandboxes(t)
	}
	for _, tc := range []struct{ name, code string }{
		{"NameError on line 3", "x = 1\ny = 2\nprint(undefined_name)"},
		{"SyntaxError", "print('a')\nx = (\n"},
		{"IndentationError", "if True:\nprint(1)"},
		{"SystemExit with a message", "raise SystemExit('bye')"},
		{"SystemExit with a code", "import sys\nprint('before')\nsys.exit(3)"},
		{"SystemExit(None)", "print('é ✓')\nraise SystemExit(None)"},
		{"exit()", "exit(4)"},
		{"error in a standard library call", "import json\njson.loads('{bad')"},
		{"error in a preloaded module's call", "import pandas as pd\ndf = pd.DataFrame({'a': [1]})\ndf.loc[5]"},
		{"error in a function", "def f():\n    return 1 / 0\n\nf()"},
		{"chained exceptions", "def f():\n    raise ValueError('in f')\ntry:\n    f()\nexcept ValueError as e:\n    raise RuntimeError('wrapped') from e"},
		{"exception during handling", "try:\n    1/0\nexcept Exception:\n    raise KeyError('ctx')"},
		{"KeyboardInterrupt", "print('x', flush=True)\nraise KeyboardInterrupt"},
		{"the program's own excepthook", "import sys\ndef hook(t, v, tb):\n    print('hook', t.__name__, tb.tb_frame.f_code.co_filename, tb.tb_lineno, tb.tb_next)\nsys.excepthook = hook\nraise ValueError(1)"},
		{"atexit after an error", "import atexit, sys\natexit.register(lambda: print('atexit', sys.last_type.__name__, sys.last_traceback.tb_lineno))\n\n1/0"},
		{"threads joined at exit", "import threading, time\ndef w():\n    time.sleep(0.2)\n    print('thread done')\nthreading.Thread(target=w).start()\nprint('main done')"},
		{"what the program sees", "import os, sys\nprint(__name__, sys.argv, repr(sys.path[0]), os.getcwd(), repr(sys.stdin.read()), sys.orig_argv[1], sys.orig_argv[2].startswith('import os, sys'))"},
		{"__main__", "import sys\nprint(sorted(globals()), __doc__, __spec__, __loader__, __package__, __annotations__, sys.modules['__main__'].__dict__ is globals())"},
		{"modules after the same imports", "import numpy, pandas, matplotlib.pyplot, sys\nprint(sorted(sys.modules))"},
		{"builtins", "import builtins\nprint(sorted(vars(builtins)))"},
		{"descriptors", "import os\nprint(sorted(os.listdir('/proc/self/fd')))"},
		{"warnings", "import warnings\nwarnings.warn('careful')\nwarnings.warn('careful')"},
		{"pickling what __main__ defines", "import pickle\nclass C: pass\nprint(pickle.loads(pickle.dumps(C())).__class__.__module__)"},
		{"closed stdout", "import sys\nprint('x')\nsys.stdout.close()"},
		{"a file left open", "f = open('out.txt', 'w')\nf.write('kept')"},
		{"a plot", "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.savefig('p.png')\nprint('saved')"},
		{"os._exit", "import os\nprint('bye', flush=True)\nos._exit(7)"},
		{"killed by a signal", "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			warm := shared
			if strings.Contains(tc.code, "pandas") || strings.Contains(tc.code, "matplotlib") {
				if data == nil {
					t.Skip("numpy, pandas and matplotlib are not installed for " + testPython())
				}
				warm = data
			}
			w := run(t, warm, tc.code, sandbox.Limits{})
			c := run(t, cold, tc.code, sandbox.Limits{})
			if !w.Warm || c.Warm {
				t.Fatalf("warm run warm %v, cold run warm %v", w.Warm, c.Warm)
			}
			if !bytes.Equal(w.Stdout, c.Stdout) || !bytes.Equal(w.Stderr, c.Stderr) || w.ExitCode != c.ExitCode {
				t.Errorf("warm: exit %d\nstdout %q\nstderr %q\ncold: exit %d\nstdout %q\nstderr %q",
					w.ExitCode, w.Stdout, w.Stderr, c.ExitCode, c.Stdout, c.Stderr)
			}
			if fmt.Sprint(names(w.Files)) != fmt.Sprint(names(c.Files)) {
				t.Errorf("files: warm %v, cold %v", names(w.Files), names(c.Files))
			}
		})
	}
}

func names(files []sandbox.File) []string {
	var n []string
	for _, f := range files {
		n = append(n, f.Name+"="+strconv.Itoa(len(f.Data)))
	}
	return n
}

// TestWarmLimits: the run's own limits hold in a warm interpreter, and the
// imports' CPU time is not the run's.
func TestWarmLimits(t *testing.T) {
	s := warmSandbox(t)
	checkWarmLimits(t, s)
}

func checkWarmLimits(t *testing.T, s *Sandbox) {
	awaitWarm(t, s, sandbox.Limits{})
	s.pmu.Lock()
	importCPU := s.warmStats.CPU
	s.pmu.Unlock()
	for _, tc := range []struct {
		name  string
		code  string
		lim   sandbox.Limits
		check func(t *testing.T, res *sandbox.Result)
	}{
		{"memory", "x = bytearray(1 << 30)\nprint('allocated')", sandbox.Limits{Memory: 256 << 20},
			func(t *testing.T, res *sandbox.Result) {
				if res.Limit != sandbox.LimitMemory {
					t.Errorf("Limit %q, exit %d, stderr %q: want memory", res.Limit, res.ExitCode, lastLine(res.Stderr))
				}
			}},
		{"memory bit by bit", "l = []\nwhile True: l.append(b'x' * (1 << 20))", sandbox.Limits{Memory: 192 << 20},
			func(t *testing.T, res *sandbox.Result) {
				if res.Limit != sandbox.LimitMemory {
					t.Errorf("Limit %q, exit %d, stderr %q: want memory", res.Limit, res.ExitCode, lastLine(res.Stderr))
				}
			}},
		// 0.6 s of CPU of its own under a limit of 1 s: the imports
		// took more than 0.4 s before the run.
		{"CPU time is the run's own", `import time
t = time.process_time()
while time.process_time() - t < 0.6: pass
print("ok")`, sandbox.Limits{CPUTime: time.Second, Timeout: 20 * time.Second},
			func(t *testing.T, res *sandbox.Result) {
				if importCPU < 500*time.Millisecond {
					t.Logf("the imports took %v of CPU: too little to tell", importCPU)
				}
				if string(res.Stdout) != "ok\n" || res.Limit != sandbox.LimitNone {
					t.Errorf("stdout %q, Limit %q, exit %d: the imports' CPU time (%v) counted against the run's", res.Stdout, res.Limit, res.ExitCode, importCPU)
				}
			}},
		{"CPU time limit", "while True: pass", sandbox.Limits{CPUTime: time.Second, Timeout: 20 * time.Second},
			func(t *testing.T, res *sandbox.Result) {
				if res.Limit != sandbox.LimitCPU {
					t.Errorf("Limit %q, exit %d: want cpu", res.Limit, res.ExitCode)
				}
			}},
		{"small disk", `import errno
try:
    open("big", "wb").write(b"x" * (20 << 20))
except OSError as e:
    print(errno.errorcode[e.errno])`, sandbox.Limits{DiskSize: 8 << 20},
			func(t *testing.T, res *sandbox.Result) {
				if out := strings.TrimSpace(string(res.Stdout)); (out != "ENOSPC" && out != "EFBIG") || res.Limit != sandbox.LimitDisk {
					t.Errorf("stdout %q, Limit %q: want the disk limit", res.Stdout, res.Limit)
				}
			}},
		// Above the defaults the warm interpreter started with.
		{"large disk", `open("big", "wb").write(b"x" * (80 << 20))
print("wrote")`, sandbox.Limits{DiskSize: 100 << 20},
			func(t *testing.T, res *sandbox.Result) {
				if string(res.Stdout) != "wrote\n" || res.ExitCode != 0 {
					t.Errorf("stdout %q, exit %d, stderr %q", res.Stdout, res.ExitCode, lastLine(res.Stderr))
				}
			}},
		{"more open files", `import os
fds = [os.open("/dev/null", 0) for _ in range(400)]
print("opened")`, sandbox.Limits{OpenFiles: 512},
			func(t *testing.T, res *sandbox.Result) {
				if string(res.Stdout) != "opened\n" {
					t.Errorf("stdout %q, stderr %q", res.Stdout, lastLine(res.Stderr))
				}
			}},
		{"fewer open files", `import os
fds = []
try:
    while True: fds.append(os.open("/dev/null", 0))
except OSError as e:
    print(len(fds) < 32, e.errno)`, sandbox.Limits{OpenFiles: 32},
			func(t *testing.T, res *sandbox.Result) {
				if string(res.Stdout) != "True 24\n" {
					t.Errorf("stdout %q, stderr %q, want EMFILE below 32", res.Stdout, lastLine(res.Stderr))
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, s, tc.code, tc.lim)
			if !res.Warm {
				t.Errorf("the run was cold")
			}
			tc.check(t, res)
		})
	}
}

// TestWarmUpFailure: a warm-up that fails (a module that is there but
// cannot be imported: encodings.mbcs is Windows's) leaves runs cold, says
// so once in the log, and turns warming off.
func TestWarmUpFailure(t *testing.T) {
	logs := &logRecords{msg: "sandbox: warming failed; runs start cold from now on"}
	s, err := New(t.Context(), Config{Python: testPython(), Concurrency: 1, Preload: []string{"json", "encodings.mbcs"}, Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !slices.Equal(s.preload, []string{"json", "encodings.mbcs"}) {
		t.Fatalf("preload %q: the probe should find encodings.mbcs", s.preload)
	}
	alwaysWarm(s)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	err = s.waitWarm(ctx)
	if err == nil || !strings.Contains(err.Error(), "import encodings.mbcs: ImportError") {
		t.Fatalf("waitWarm: %v, want the failed import", err)
	}
	if _, err := s.Warmth(ctx); err == nil || !strings.Contains(err.Error(), "runs start cold") {
		t.Errorf("Warmth: %v, want the failure", err)
	}
	for range 3 {
		res, err := s.Run(t.Context(), sandbox.Request{Code: "print(6 * 7)"})
		if err != nil {
			t.Fatal(err)
		}
		if string(res.Stdout) != "42\n" || res.Warm {
			t.Errorf("stdout %q, warm %v: want a cold run", res.Stdout, res.Warm)
		}
		time.Sleep(50 * time.Millisecond) // time enough to warm, were it on
	}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	if len(logs.attrs) != 1 {
		t.Errorf("logged %d times, want once: %v", len(logs.attrs), logs.attrs)
	} else if why := logs.attrs[0]["err"].String(); !strings.Contains(why, "ImportError") {
		t.Errorf("logged %q, want the import's error", why)
	}
}

// TestWarmUpPausedWhileRunsGo: a warm-up under way stops while a run is in
// flight, and goes on after.
func TestWarmUpPausedWhileRunsGo(t *testing.T) {
	s, _ := newDataSandboxes(t)
	// Runs that import only the standard library take cold sandboxes.
	s.pmu.Lock()
	s.alwaysWarm = false
	s.pmu.Unlock()
	defer alwaysWarm(s)
	for attempt := 0; ; attempt++ {
		// Use the warm sandbox: the pool starts the next warm-up.
		awaitWarm(t, s, sandbox.Limits{})
		if res := run(t, s, "import pandas\nprint(1)", sandbox.Limits{}); !res.Warm {
			t.Fatal("a run importing pandas started cold")
		}
		var w *ready
		eventually(10*time.Second, func() bool {
			s.pmu.Lock()
			defer s.pmu.Unlock()
			w = s.warming
			return w != nil
		})
		if w == nil {
			t.Fatal("no warm-up started")
		}
		done := make(chan *sandbox.Result)
		go func() {
			res, err := s.Run(context.Background(), sandbox.Request{Code: "import time\ntime.sleep(1.5)"})
			if err != nil {
				t.Error(err)
			}
			done <- res
		}()
		time.Sleep(500 * time.Millisecond)
		s.pmu.Lock()
		still, paused := w.warm == warmWarming, w.paused
		s.pmu.Unlock()
		stopped := stoppedBootstraps()
		res := <-done
		if res != nil && res.Warm {
			t.Errorf("a run importing only the standard library took a warm sandbox")
		}
		if !still {
			if attempt < 3 {
				continue // it was ready before the run started: again
			}
			t.Fatal("every warm-up was over before the run started")
		}
		if !paused || stopped == 0 {
			t.Errorf("while a run was in flight: warm-up paused %v, stopped interpreters %d", paused, stopped)
		}
		break
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := s.waitWarm(ctx); err != nil {
		t.Errorf("the warm-up did not go on: %v", err)
	}
}

// stoppedBootstraps counts the host's processes running the bootstrap
// that are stopped.
func stoppedBootstraps() int {
	n := 0
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if !bytes.HasPrefix(cmd, []byte("python3\x00-c\x00"+bootstrapSource[:20])) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'T' {
			n++
		}
	}
	return n
}

// TestRunsImportingOnlyTheStandardLibraryStartCold: they start faster cold.
func TestRunsImportingOnlyTheStandardLibraryStartCold(t *testing.T) {
	s, err := New(t.Context(), Config{Python: testPython(), Concurrency: 1, Preload: []string{"json"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.pmu.Lock()
	s.warmIdle = time.Millisecond
	s.pmu.Unlock()
	for _, tc := range []struct {
		code string
		warm bool
	}{
		{"print(5 + 5 - 84**3)", false},
		{"import math, statistics\nprint(1)", false},
		{"import json\nprint(1)", false},
		{"import sandpiper_not_standard\n", true},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		if err := s.waitWarm(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		res, err := s.Run(t.Context(), sandbox.Request{Code: tc.code})
		if err != nil {
			t.Fatal(err)
		}
		if res.Warm != tc.warm {
			t.Errorf("%q: warm %v, want %v", tc.code, res.Warm, tc.warm)
		}
	}
}

func TestImportsBeyond(t *testing.T) {
	stdlib := map[string]bool{"os": true, "math": true, "json": true, "collections": true, "xml": true}
	for _, tc := range []struct {
		code string
		want bool
	}{
		{"print(1)", false},
		{"import os", false},
		{"import os, math as m\nfrom collections import Counter", false},
		{"from xml.etree import ElementTree", false},
		{"from __future__ import annotations\nimport json", false},
		{"import numpy as np", true},
		{"import os, pandas", true},
		{"  from scipy import stats  # indented", true},
		{"from matplotlib import pyplot as plt", true},
		{"x = __import__('pandas')", true},
		{"import importlib\nimportlib.import_module('numpy')", true},
		{"import os; import pandas as pd", true},
		{"print('import numpy')", false}, // not a statement
	} {
		if got := importsBeyond(tc.code, stdlib); got != tc.want {
			t.Errorf("importsBeyond(%q) = %v, want %v", tc.code, got, tc.want)
		}
	}
	if !importsBeyond("import os", nil) {
		t.Errorf("without the standard library's list, every import counts")
	}
}

func TestCheckPreload(t *testing.T) {
	if err := CheckPreload([]string{"numpy", "matplotlib.pyplot", "_x1"}); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"", "a b", "os;print(1)", "x.", ".x", "1x", "a-b", `"]; import os; ["`} {
		if CheckPreload([]string{bad}) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := New(t.Context(), Config{Python: testPython(), Preload: []string{"os;x"}}); err == nil {
		t.Error("New accepted a bad module name")
	}
}

// TestPreloadMissingModules: modules the interpreter lacks are left out,
// in one log line; with none left, runs start cold.
func TestPreloadMissingModules(t *testing.T) {
	logs := &logRecords{msg: "sandbox: modules to preload that the interpreter does not have are left out"}
	s, err := New(t.Context(), Config{Python: testPython(), Concurrency: 1, Preload: []string{"sandpiper_missing", "json", "json.sandpiper_missing"}, Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !slices.Equal(s.preload, []string{"json"}) {
		t.Errorf("preload %q, want json alone", s.preload)
	}
	if len(logs.attrs) != 1 || logs.attrs[0]["modules"].String() != "sandpiper_missing,json.sandpiper_missing" {
		t.Errorf("logged %v", logs.attrs)
	}
	s2, err := New(t.Context(), Config{Python: testPython(), Concurrency: 1, Preload: []string{"sandpiper_missing"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if len(s2.preload) != 0 || s2.bootstrap != "" {
		t.Errorf("preload %q", s2.preload)
	}
}

func TestWarmth(t *testing.T) {
	s := newTestSandbox(t)
	got, err := s.Warmth(t.Context())
	if err != nil || !strings.Contains(got, "start warm: "+strings.Join(s.preload, ", ")+" preloaded in") {
		t.Errorf("Warmth = %q, %v", got, err)
	}
	cold := coldSandbox(t)
	if got, err := cold.Warmth(t.Context()); err != nil || got != "runs start cold: nothing to preload" {
		t.Errorf("without preloading: %q, %v", got, err)
	}
}

// coldSandbox returns a sandbox without preloading: the warm tests' one,
// or one of its own.
func coldSandbox(t *testing.T) *Sandbox {
	if hasDataStack() {
		_, cold := newDataSandboxes(t)
		return cold
	}
	s, err := New(t.Context(), Config{Python: testPython(), Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
