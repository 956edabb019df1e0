package sandboxtest

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// Runner is a backend under test.
type Runner interface {
	Run(ctx context.Context, req sandbox.Request) (*sandbox.Result, error)
	Info() sandbox.Info
}

// Skip names a test of the suite that a backend's test double cannot
// pass, and why: a fake that runs programs in a way the real service
// does not. What the backend itself does not do is its Info's to
// declare, not a Skip's.
type Skip struct {
	Test string // "TimeoutOutput"
	Why  string
}

// TestRunner runs the conformance suite's tests, in parallel, each against the runner
// newRunner returns for it (it may return the same runner every time:
// each test's runs are its own). The tests skip names are skipped, with
// their reasons.
func TestRunner(t *testing.T, newRunner func(t *testing.T) Runner, skip ...Skip) {
	for _, s := range skip {
		if !slices.ContainsFunc(tests, func(tc test) bool { return tc.name == s.Test }) || s.Why == "" {
			t.Errorf("sandboxtest: skip %+v: want a test of the suite, and why", s)
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if i := slices.IndexFunc(skip, func(s Skip) bool { return s.Test == tc.name }); i >= 0 {
				t.Skipf("the test double cannot pass it: %s", skip[i].Why)
			}
			tc.run(t, newRunner(t))
		})
	}
}

type test struct {
	name string
	run  func(t *testing.T, r Runner)
}

var tests = []test{
	{"Info", testInfo},
	{"Output", testOutput},
	{"ExitCode", testExitCode},
	{"Traceback", testTraceback},
	{"OutputCap", testOutputCap},
	{"Timeout", testTimeout},
	{"TimeoutOutput", testTimeoutOutput},
	{"Memory", testMemory},
	{"CPUTime", testCPUTime},
	{"Disk", testDisk},
	{"Processes", testProcesses},
	{"CPUs", testCPUs},
	{"Files", testFiles},
	{"Fresh", testFresh},
	{"Concurrent", testConcurrent},
	{"State", testState},
}

// run runs req and fails the test on an error.
func run(t *testing.T, r Runner, req sandbox.Request) *sandbox.Result {
	t.Helper()
	res, err := r.Run(t.Context(), req)
	if err != nil {
		t.Fatalf("Run(%q): %v", req.Code, err)
	}
	if res == nil {
		t.Fatalf("Run(%q): a nil Result and no error", req.Code)
	}
	return res
}

// describe is a result in a line, for failures.
func describe(res *sandbox.Result) string {
	return fmt.Sprintf("exit %d, limit %q, stdout %q, stderr %q", res.ExitCode, res.Limit, cut(res.Stdout), cut(res.Stderr))
}

func cut(b []byte) string {
	if len(b) > 300 {
		return string(b[:150]) + " … " + string(b[len(b)-150:])
	}
	return string(b)
}

// enforced skips the test when the backend says it does not bound field.
func enforced(t *testing.T, r Runner, field string) {
	t.Helper()
	if ok, why := r.Info().Enforces(field); !ok {
		t.Skipf("the %s backend does not enforce Limits.%s (its Info): %s", r.Info().Backend, field, why)
	}
}

// testInfo: the backend names itself, and reports every limit a run gets.
func testInfo(t *testing.T, r Runner) {
	info := r.Info()
	if !slices.Contains(sandbox.Backends, info.Backend) {
		t.Errorf("Info().Backend = %q, want one of %q", info.Backend, sandbox.Backends)
	}
	if info.Limits != info.Limits.WithDefaults() {
		t.Errorf("Info().Limits = %+v: a field is not set (want every limit a run gets)", info.Limits)
	}
	fields := reflect.TypeFor[sandbox.Limits]()
	for _, u := range info.Unenforced {
		if _, ok := fields.FieldByName(u.Field); !ok || u.Why == "" {
			t.Errorf("Info().Unenforced has %+v: want a field of sandbox.Limits, and why", u)
		}
	}
}

// testOutput: stdout and stderr come back apart, as written, UTF-8
// included.
func testOutput(t *testing.T, r Runner) {
	res := run(t, r, sandbox.Request{Code: "import sys\nprint('out')\nprint('err', file=sys.stderr)\nprint('π ≈ 3.14159')"})
	if string(res.Stdout) != "out\nπ ≈ 3.14159\n" || string(res.Stderr) != "err\n" || res.ExitCode != 0 || res.Limit != sandbox.LimitNone || res.Failed() {
		t.Errorf("%s; want stdout \"out\\nπ ≈ 3.14159\\n\", stderr \"err\\n\", exit 0, no limit", describe(res))
	}
	if res.StdoutSize != int64(len(res.Stdout)) || res.Truncated() {
		t.Errorf("stdout size %d, truncated %v; want %d, not truncated", res.StdoutSize, res.Truncated(), len(res.Stdout))
	}
}

// testExitCode: the program's exit status, with what it printed.
func testExitCode(t *testing.T, r Runner) {
	res := run(t, r, sandbox.Request{Code: "import sys\nprint('bye')\nsys.exit(3)"})
	if res.ExitCode != 3 || string(res.Stdout) != "bye\n" || res.Limit != sandbox.LimitNone || !res.Failed() {
		t.Errorf("%s; want exit 3, stdout \"bye\\n\", no limit", describe(res))
	}
}

// testTraceback: an exception is exit 1 and a traceback, not an error.
func testTraceback(t *testing.T, r Runner) {
	res := run(t, r, sandbox.Request{Code: "x = 1\nprint(x / 0)"})
	if res.ExitCode != 1 || !strings.Contains(string(res.Stderr), "ZeroDivisionError") || res.Limit != sandbox.LimitNone {
		t.Errorf("%s; want exit 1 and a ZeroDivisionError", describe(res))
	}
}

// testOutputCap: output past Limits.Output is counted and dropped.
func testOutputCap(t *testing.T, r Runner) {
	res := run(t, r, sandbox.Request{Code: "import sys\nprint('x' * 5000)\nprint('e' * 3000, file=sys.stderr)", Limits: sandbox.Limits{Output: 1024}})
	if string(res.Stdout) != strings.Repeat("x", 1024) || !res.StdoutTruncated || res.StdoutSize != 5001 {
		t.Errorf("stdout %d bytes of %d, truncated %v; want 1024 of 5001, truncated", len(res.Stdout), res.StdoutSize, res.StdoutTruncated)
	}
	if len(res.Stderr) != 1024 || !res.StderrTruncated || res.StderrSize != 3001 {
		t.Errorf("stderr %d bytes of %d, truncated %v; want 1024 of 3001, truncated", len(res.Stderr), res.StderrSize, res.StderrTruncated)
	}
	if !slices.Contains(res.Caps, sandbox.CapOutput) || res.ExitCode != 0 {
		t.Errorf("caps %v, exit %d; want %q, exit 0", res.Caps, res.ExitCode, sandbox.CapOutput)
	}
}

// testTimeout: the wall clock ends the run, killed (137), named.
func testTimeout(t *testing.T, r Runner) {
	start := time.Now()
	res := run(t, r, sandbox.Request{Code: "import time\ntime.sleep(60)\nprint('woke')", Limits: sandbox.Limits{Timeout: time.Second}})
	if res.Limit != sandbox.LimitTimeout || res.ExitCode != 137 || len(res.Stdout) > 0 || !res.Failed() {
		t.Errorf("%s; want limit timeout, exit 137, no output", describe(res))
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("a run with a timeout of 1s took %s", took)
	}
}

// testTimeoutOutput: what a program printed before its timeout comes
// back, and the files it wrote.
func testTimeoutOutput(t *testing.T, r Runner) {
	// Long enough for Python to start on a loaded machine.
	res := run(t, r, sandbox.Request{Code: "import time\nprint('started', flush=True)\nopen('partial.txt', 'w').write('p')\ntime.sleep(60)",
		Limits: sandbox.Limits{Timeout: 3 * time.Second}})
	if res.Limit != sandbox.LimitTimeout || string(res.Stdout) != "started\n" {
		t.Errorf("%s; want limit timeout, stdout \"started\\n\"", describe(res))
	}
	if len(res.Files) != 1 || res.Files[0].Name != "partial.txt" {
		t.Errorf("files %v; want partial.txt", res.Files)
	}
}

// testMemory: an allocation past the memory limit ends the program (a
// kill, 137, or a MemoryError), named.
func testMemory(t *testing.T, r Runner) {
	res := run(t, r, sandbox.Request{Code: "b = bytearray(1 << 30)\nprint(len(b))", Limits: sandbox.Limits{Memory: 64 << 20}})
	if res.Limit != sandbox.LimitMemory || res.ExitCode == 0 || !res.Failed() || len(res.Stdout) > 0 {
		t.Errorf("%s; want limit memory and a failed exit", describe(res))
	}
	if res.ExitCode != 137 && !strings.Contains(string(res.Stderr), "MemoryError") {
		t.Errorf("%s; want exit 137 (killed) or a MemoryError", describe(res))
	}
}

// testCPUTime: the CPU-time limit ends a busy program with SIGXCPU (152),
// named, before the wall clock does.
func testCPUTime(t *testing.T, r Runner) {
	res := run(t, r, sandbox.Request{Code: "while True: pass", Limits: sandbox.Limits{CPUTime: time.Second, Timeout: 2 * time.Minute}})
	if res.Limit != sandbox.LimitCPU || res.ExitCode != 152 || !res.Failed() {
		t.Errorf("%s; want limit cpu, exit 152", describe(res))
	}
}

// testDisk: a write past the disk limit fails in the program, named.
func testDisk(t *testing.T, r Runner) {
	enforced(t, r, "DiskSize")
	res := run(t, r, sandbox.Request{Code: "with open('big.bin', 'wb') as f:\n    f.write(b'x' * (4 << 20))", Limits: sandbox.Limits{DiskSize: 1 << 20}})
	if res.Limit != sandbox.LimitDisk || res.ExitCode == 0 {
		t.Errorf("%s; want limit disk and a failed exit", describe(res))
	}
	for _, f := range res.Files {
		if len(f.Data) > 1<<20 {
			t.Errorf("file %s of %d bytes came back, more than the disk limit", f.Name, len(f.Data))
		}
	}
}

// testProcesses: a program cannot start more processes and threads than
// the limit; when the result names a limit, it is this one.
func testProcesses(t *testing.T, r Runner) {
	enforced(t, r, "Processes")
	res := run(t, r, sandbox.Request{Code: `import threading, time
started = 0
try:
    for _ in range(64):
        threading.Thread(target=time.sleep, args=(3,), daemon=True).start()
        started += 1
except (RuntimeError, OSError):
    pass
print(started)`, Limits: sandbox.Limits{Processes: 8, Timeout: 30 * time.Second}})
	var n int
	if _, err := fmt.Sscan(string(res.Stdout), &n); err != nil || n >= 64 || res.ExitCode != 0 {
		t.Errorf("%s; want fewer than 64 threads started, and exit 0", describe(res))
	}
	if res.Limit != sandbox.LimitNone && res.Limit != sandbox.LimitProcesses {
		t.Errorf("%s; want limit processes, or none", describe(res))
	}
}

// testCPUs: a program busier than its CPU quota is throttled, not ended,
// and the result says so. Two processes burn for two seconds against a
// quota of 0.02 CPUs, which they pass however busy the machine is.
func testCPUs(t *testing.T, r Runner) {
	enforced(t, r, "CPUs")
	res := run(t, r, sandbox.Request{Code: `import os, time
start = time.monotonic()
kids = []
for _ in range(2):
    pid = os.fork()
    if pid == 0:
        while time.monotonic() - start < 2: pass
        os._exit(0)
    kids.append(pid)
for k in kids: os.waitpid(k, 0)
print('done')`, Limits: sandbox.Limits{CPUs: 0.02, Timeout: time.Minute}})
	if res.ExitCode != 0 || res.Limit != sandbox.LimitNone || !slices.Contains(res.Caps, sandbox.CapCPUQuota) {
		t.Errorf("%s, caps %v; want exit 0, no limit, and %q", describe(res), res.Caps, sandbox.CapCPUQuota)
	}
}

// testFiles: input files are in the working directory, nested ones too;
// the files the program creates or changes come back, in lexical order,
// and unchanged inputs do not.
func testFiles(t *testing.T, r Runner) {
	res := run(t, r, sandbox.Request{
		Code: `import pathlib
rows = pathlib.Path("data.csv").read_text().splitlines()
print("rows", len(rows))
pathlib.Path("out").mkdir()
pathlib.Path("out/sum.txt").write_text(str(sum(int(r) for r in rows)))
pathlib.Path("notes/a.txt").write_text("changed")
pathlib.Path("bytes.bin").write_bytes(bytes(range(256)))`,
		Files: []sandbox.File{
			{Name: "data.csv", Data: []byte("1\n2\n3\n")},
			{Name: "notes/a.txt", Data: []byte("original")},
			{Name: "notes/b.txt", Data: []byte("left alone")},
		},
	})
	if string(res.Stdout) != "rows 3\n" || res.ExitCode != 0 {
		t.Fatalf("%s; want stdout \"rows 3\\n\", exit 0", describe(res))
	}
	var names []string
	for _, f := range res.Files {
		data := string(f.Data)
		if f.Name == "bytes.bin" {
			if string(f.Data) != string(bytes256()) {
				t.Errorf("bytes.bin came back as %q", f.Data)
			}
			data = "…"
		}
		names = append(names, f.Name+"="+data)
	}
	if want := []string{"bytes.bin=…", "notes/a.txt=changed", "out/sum.txt=6"}; !slices.Equal(names, want) {
		t.Errorf("files %q, want %q", names, want)
	}
}

func bytes256() []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

// testFresh: a run does not see what an earlier run left.
func testFresh(t *testing.T, r Runner) {
	res := run(t, r, sandbox.Request{Code: "open('left.txt', 'w').write('x')\nimport tempfile, os\nopen(os.path.join(tempfile.gettempdir(), 'left.tmp'), 'w').write('x')"})
	if res.ExitCode != 0 {
		t.Fatalf("first run: %s", describe(res))
	}
	res = run(t, r, sandbox.Request{Code: "import os, tempfile\nprint(os.path.exists('left.txt'), os.path.exists(os.path.join(tempfile.gettempdir(), 'left.tmp')))"})
	if string(res.Stdout) != "False False\n" {
		t.Errorf("second run: %s; want \"False False\": nothing of the first run's", describe(res))
	}
}

// testConcurrent: runs at once each get their own sandbox and output.
func testConcurrent(t *testing.T, r Runner) {
	const n = 4
	var wg sync.WaitGroup
	results := make([]*sandbox.Result, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			results[i], errs[i] = r.Run(t.Context(), sandbox.Request{
				Code:  fmt.Sprintf("import time\nopen('mine.txt', 'w').write(open('in.txt').read() + '%d')\ntime.sleep(0.2)\nprint(open('mine.txt').read())", i),
				Files: []sandbox.File{{Name: "in.txt", Data: []byte("run ")}},
			})
		})
	}
	wg.Wait()
	for i := range n {
		want := fmt.Sprintf("run %d", i)
		switch res := results[i]; {
		case errs[i] != nil:
			t.Errorf("run %d: %v", i, errs[i])
		case string(res.Stdout) != want+"\n" || len(res.Files) != 1 || string(res.Files[0].Data) != want:
			t.Errorf("run %d: %s, files %d; want %q, and mine.txt holding it", i, describe(res), len(res.Files), want)
		}
	}
}

// testState: with KeepState, a run's names are saved and the next run
// starts with them.
func testState(t *testing.T, r Runner) {
	if info := r.Info(); !info.KeepsState {
		t.Skipf("the %s backend keeps no state (its Info says so)", info.Backend)
	}
	res := run(t, r, sandbox.Request{Code: "x = 41\ndef f():\n    return x + 1\nimport math", KeepState: true})
	if res.ExitCode != 0 || res.State == nil || res.State.Data == nil {
		t.Fatalf("first run: %s, state %+v; want a saved state", describe(res), res.State)
	}
	if !slices.Contains(res.State.Kept, "x") || !slices.Contains(res.State.Kept, "f") {
		t.Errorf("kept %q, want x and f among them", res.State.Kept)
	}
	res = run(t, r, sandbox.Request{Code: "print(f(), math.pi > 3)", KeepState: true, State: res.State.Data})
	if string(res.Stdout) != "42 True\n" || res.ExitCode != 0 {
		t.Errorf("second run: %s; want \"42 True\"", describe(res))
	}
	if res.State == nil || !slices.Contains(res.State.Restored, "x") {
		t.Errorf("second run's state %+v; want x restored", res.State)
	}
}
