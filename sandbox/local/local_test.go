//go:build linux && cgo && (amd64 || arm64)

package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/sandboxtest"
)

// testPython is the interpreter the tests use: the real one, not a shim.
func testPython() string {
	if p := os.Getenv("SANDPIPER_TEST_PYTHON"); p != "" {
		return p
	}
	return "/usr/bin/python3"
}

var (
	sharedOnce sync.Once
	shared     *Sandbox
	sharedErr  error
)

// newTestSandbox returns a sandbox shared by the tests (creating one runs a
// self-test, which is worth doing once). Its runs are warm: it preloads
// numpy (the standard library's json without numpy), and run gives every
// run a warm sandbox.
func newTestSandbox(t testing.TB) *Sandbox {
	t.Helper()
	sharedOnce.Do(func() {
		shared, sharedErr = New(context.Background(), Config{Python: testPython(), PrepareCaches: true, Preload: testPreload()})
		if sharedErr == nil {
			<-shared.cachesDone
			alwaysWarm(shared)
		}
	})
	if sharedErr != nil {
		t.Fatalf("New: %v", sharedErr)
	}
	return shared
}

// testPreload is what the shared sandbox preloads: numpy where the
// interpreter has it (a quarter of a second's import, BLAS threads and 16
// MB of memory in every run), else json.
func testPreload() []string {
	if hasNumpy() {
		return []string{"numpy"}
	}
	return []string{"json"}
}

// alwaysWarm has every run of s that may be warm be warm: run waits for a
// warm sandbox, take gives it whatever the code imports, and warm-ups
// start as soon as no run is in flight.
func alwaysWarm(s *Sandbox) {
	s.pmu.Lock()
	s.alwaysWarm = true
	s.warmIdle = time.Millisecond
	s.pmu.Unlock()
}

// run runs code in s. When s is alwaysWarm and a warm interpreter leaves
// the run's memory limit room, it waits for a warm sandbox first and fails
// the test if the run was cold.
func run(t *testing.T, s *Sandbox, code string, lim sandbox.Limits, files ...sandbox.File) *sandbox.Result {
	t.Helper()
	warm := s.alwaysWarm && awaitWarm(t, s, lim)
	res, err := s.Run(t.Context(), sandbox.Request{Code: code, Limits: lim, Files: files})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if warm && !res.Warm {
		t.Errorf("the run started cold; want it warm")
	}
	return res
}

// awaitWarm waits until s has a warm sandbox that fits a run with limits
// lim; it reports false when none will (the warm interpreter holds more
// than half the run's memory limit).
func awaitWarm(t *testing.T, s *Sandbox, lim sandbox.Limits) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := s.waitWarm(ctx); err != nil { // and learn what it holds
		t.Fatalf("waiting for a warm sandbox: %v", err)
	}
	s.pmu.Lock()
	fits := s.fits(s.warmStats.Memory, lim.Or(s.cfg.Limits))
	s.pmu.Unlock()
	return fits
}

// stillWorks checks that the sandbox serves an ordinary run after an
// abusive one (warm or cold, whichever it has).
func stillWorks(t *testing.T, s *Sandbox) {
	t.Helper()
	res, err := s.Run(t.Context(), sandbox.Request{Code: "print(5 + 5 - 84**3)"})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := string(res.Stdout); got != "-592694\n" || res.ExitCode != 0 {
		t.Fatalf("next run: stdout %q exit %d stderr %q, want -592694", got, res.ExitCode, res.Stderr)
	}
}

func TestOrdinaryPrograms(t *testing.T) {
	s := newTestSandbox(t)
	for _, tc := range []struct {
		name      string
		code      string
		stdout    string
		stderrHas string
		exit      int
	}{
		{"arithmetic", "print(5 + 5 - 84**3)", "-592694\n", "", 0},
		{"streams apart", "import sys\nprint('out')\nprint('err', file=sys.stderr)", "out\n", "err\n", 0},
		{"exit code", "import sys; sys.exit(3)", "", "", 3},
		{"unicode", "print('π ≈ 3.14159 — ✓ 日本')", "π ≈ 3.14159 — ✓ 日本\n", "", 0},
		{"traceback", "print('before')\n1/0", "before\n", "ZeroDivisionError: division by zero", 1},
		{"stdin closed", "try:\n    input()\nexcept EOFError:\n    print('eof')", "eof\n", "", 0},
		{"working directory", "import os; print(os.getcwd())", "/mnt/data\n", "", 0},
		{"no output", "x = 1", "", "", 0},
		{"killed by signal", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)", "", "", 128 + 15},
		{"stdlib", "import json, sqlite3, decimal, statistics; print(statistics.mean([1, 2, 3, 4]))", "2.5\n", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, s, tc.code, sandbox.Limits{})
			if got := string(res.Stdout); got != tc.stdout {
				t.Errorf("stdout = %q, want %q (stderr %q)", got, tc.stdout, res.Stderr)
			}
			if tc.stderrHas == "" && len(res.Stderr) > 0 {
				t.Errorf("stderr = %q, want empty", res.Stderr)
			}
			if !bytes.Contains(res.Stderr, []byte(tc.stderrHas)) {
				t.Errorf("stderr = %q, want it to contain %q", res.Stderr, tc.stderrHas)
			}
			if res.ExitCode != tc.exit {
				t.Errorf("exit code = %d, want %d", res.ExitCode, tc.exit)
			}
			if res.Truncated() || res.Limit != sandbox.LimitNone {
				t.Errorf("limits reported on an ordinary run: %+v", res)
			}
			if res.Duration <= 0 {
				t.Errorf("duration = %v", res.Duration)
			}
		})
	}
}

// TestEscapes runs each probe and checks what it saw; every probe prints
// "OK" only when the sandbox held.
func TestEscapes(t *testing.T) {
	s := newTestSandbox(t)
	const secret = "xoxb-sandpiper-test-secret-4242"
	t.Setenv("SLACK_BOT_TOKEN", secret)
	t.Setenv("SANDPIPER_MODEL_API_KEY", secret)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("host service\n"))
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	tmp := t.TempDir()
	os.WriteFile(filepath.Join(tmp, "host-file"), []byte(secret), 0o644)
	wd, _ := os.Getwd()
	hostSleeper := exec.Command("sleep", "30")
	if err := hostSleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer hostSleeper.Process.Kill()

	for _, tc := range []struct{ name, code string }{
		{"environment", `import os
assert os.environ.get("SLACK_BOT_TOKEN") is None and os.environ.get("SANDPIPER_MODEL_API_KEY") is None
for k in os.environ: assert k in {"PATH","HOME","LANG","TMPDIR","USER","PYTHONUNBUFFERED","PYTHONDONTWRITEBYTECODE","MPLBACKEND","MPLCONFIGDIR","OPENBLAS_NUM_THREADS","OMP_NUM_THREADS","OPENBLAS_CORETYPE","OPENBLAS_L2_SIZE"}, k
print("OK")`},
		{"process environments", `import os
SECRET = b"` + reverse(secret) + `"[::-1]
for pid in [p for p in os.listdir("/proc") if p.isdigit()] + ["self"]:
    for f in ("environ", "cmdline"):
        try:
            data = open(f"/proc/{pid}/{f}", "rb").read()
        except OSError:
            continue
        assert SECRET not in data, (pid, f)
try:
    open("/proc/1/environ", "rb").read()
    raise SystemExit("init's environ is readable")
except PermissionError:
    pass
print("OK")`},
		{"host files", `import os
for p in ["/etc/shadow", "/etc/passwd-", "/root", "/home", "/var", "/sys", "/run", "/boot", "/srv", ` + strconv.Quote(tmp) + `, ` + strconv.Quote(filepath.Join(tmp, "host-file")) + `, ` + strconv.Quote(wd) + `, "/proc/1/root/etc/shadow"]:
    assert not os.path.exists(p) or p == "/proc/1/root/etc/shadow" and not os.access(p, os.R_OK), p
print("OK")`},
		{"root listing", `import os
assert set(os.listdir("/")) <= {"usr","bin","sbin","lib","lib32","lib64","libx32","etc","dev","proc","tmp","mnt"}, os.listdir("/")
assert set(os.listdir("/dev")) <= {"null","zero","random","urandom","fd","stdin","stdout","stderr","shm"}, os.listdir("/dev")
assert set(os.listdir("/etc")) <= {"ld.so.cache","ld.so.conf","ld.so.conf.d","alternatives","localtime","matplotlibrc","fonts","mime.types","ssl","passwd","group","hosts","hostname","nsswitch.conf"}, os.listdir("/etc")
print("OK")`},
		{"only own processes", `import os
pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
assert pids == [1, os.getpid()], pids
assert os.getuid() == 1000 and os.getgid() == 1000
assert open("/proc/self/uid_map").read().split() == ["1000", "` + strconv.Itoa(s.hostID) + `", "1"]
print("OK")`},
		{"open descriptors", `import os
assert sorted(int(f) for f in os.listdir("/proc/self/fd")) == [0, 1, 2, 3], os.listdir("/proc/self/fd")  # 3: the listing itself
print("OK")`},
		{"loopback service", `import socket
try:
    socket.create_connection(("127.0.0.1", ` + strconv.Itoa(port) + `), timeout=2)
    raise SystemExit("connected to the host's loopback")
except OSError as e:
    print("OK", type(e).__name__)`},
		{"internet and dns", `import socket
for host in ["1.1.1.1", "8.8.8.8"]:
    try:
        socket.create_connection((host, 53), timeout=2)
        raise SystemExit("connected to " + host)
    except OSError:
        pass
try:
    socket.getaddrinfo("example.com", 80)
    raise SystemExit("dns lookup worked")
except OSError:
    pass
print("OK")`},
		{"no interfaces but a down loopback", `import socket
names = [n for _, n in socket.if_nameindex()]
assert names == ["lo"], names
print("OK")`},
		{"write outside", `import os, errno
for p in ["/x", "/usr/x", "/etc/x", "/usr/lib/x", "/dev/x", "/proc/x"]:
    try:
        open(p, "w")
        raise SystemExit("wrote " + p)
    except OSError as e:
        assert e.errno in (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOENT), (p, e)
open("/tmp/ok", "w").write("x"); open("/mnt/data/ok", "w").write("x")
print("OK")`},
		{"dangerous syscalls", `import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
def refused(name, *args):
    r = getattr(libc, name)(*args)
    assert r == -1, (name, r)
    e = ctypes.get_errno()
    assert e in (errno.EPERM, errno.ENOSYS, errno.EACCES), (name, e)
refused("ptrace", 0, 0, None, None)                        # PTRACE_TRACEME
refused("ptrace", 16, 1, None, None)                       # PTRACE_ATTACH init
refused("mount", b"none", b"/tmp", b"tmpfs", 0, None)
refused("unshare", 0x10000000)                             # CLONE_NEWUSER
refused("unshare", 0x20000)                                # CLONE_NEWNS
refused("setns", 0, 0)
refused("chroot", b"/tmp")
refused("syscall", 321, 0, 0, 0)                           # bpf
refused("syscall", 425, 16, None)                          # io_uring_setup
refused("syscall", 250, 0, 0, 0)                           # keyctl
refused("syscall", 298, None, 0, -1, -1, 0)                # perf_event_open
refused("syscall", 169, 0xfee1dead, 672274793, 0x1234567)  # reboot
refused("syscall", 313, 0, b"", 0)                         # finit_module
refused("sethostname", b"x", 1)
refused("syscall", 435, None, 0)                           # clone3
assert open("/proc/sys/user/max_user_namespaces").read().strip() == "0"
for f in (os.setuid, os.setgid):
    try:
        f(0)
        raise SystemExit("setuid worked")
    except OSError as e:
        assert e.errno in (errno.EPERM, errno.EINVAL), e
print("OK")`},
		{"kill everything", `import os, signal
try:
    os.kill(-1, signal.SIGKILL)   # only the sandbox's other processes (none)
except ProcessLookupError:
    pass
for pid in (1, ` + strconv.Itoa(os.Getpid()) + `, ` + strconv.Itoa(hostSleeper.Process.Pid) + `):
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
print("OK")`},
		{"capabilities", `status = dict(l.split(":\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\t" in l)
for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
    assert int(status[k], 16) == 0, (k, status[k])
assert status["NoNewPrivs"].strip() == "1"
assert status["Groups"].strip() == "", status["Groups"]
assert status["Seccomp"].strip() == "2"
print("OK")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, s, tc.code, sandbox.Limits{Timeout: 20 * time.Second})
			if !strings.HasPrefix(string(res.Stdout), "OK") || res.ExitCode != 0 {
				t.Errorf("probe failed: exit %d\nstdout: %s\nstderr: %s", res.ExitCode, res.Stdout, res.Stderr)
			}
			if bytes.Contains(res.Stdout, []byte(secret)) || bytes.Contains(res.Stderr, []byte(secret)) {
				t.Errorf("secret leaked into the output")
			}
			stillWorks(t, s)
		})
	}
	if err := syscall.Kill(hostSleeper.Process.Pid, 0); err != nil {
		t.Errorf("the host's sleep process was killed: %v", err)
	}
}

// TestLimits checks that each limit ends (or bounds) a run, says so, and
// leaves nothing behind.
func TestLimits(t *testing.T) {
	s := newTestSandbox(t)
	for _, tc := range []struct {
		name  string
		code  string
		lim   sandbox.Limits
		check func(t *testing.T, res *sandbox.Result)
	}{
		{"cpu spin", "print('spinning', flush=True)\nwhile True: pass", sandbox.Limits{Timeout: time.Second},
			func(t *testing.T, res *sandbox.Result) {
				if res.Limit != sandbox.LimitTimeout {
					t.Errorf("Limit=%q, want timeout", res.Limit)
				}
				if string(res.Stdout) != "spinning\n" {
					t.Errorf("output before the timeout lost: %q", res.Stdout)
				}
				if res.Duration > 4*time.Second {
					t.Errorf("duration %v, want about 1s", res.Duration)
				}
			}},
		{"sleep", "import time; time.sleep(1e6)", sandbox.Limits{Timeout: time.Second},
			func(t *testing.T, res *sandbox.Result) {
				if res.Limit != sandbox.LimitTimeout {
					t.Errorf("not timed out: %+v", res)
				}
			}},
		{"cpu time", "while True: pass", sandbox.Limits{Timeout: 10 * time.Second, CPUTime: time.Second},
			func(t *testing.T, res *sandbox.Result) {
				if res.Limit != sandbox.LimitCPU {
					t.Errorf("Limit=%q exit %d, want cpu", res.Limit, res.ExitCode)
				}
			}},
		{"memory bomb", "x = bytearray(1 << 30)\nprint('allocated')", sandbox.Limits{Memory: 128 << 20},
			func(t *testing.T, res *sandbox.Result) {
				if res.Limit != sandbox.LimitMemory {
					t.Errorf("Limit=%q exit %d stderr %q, want memory", res.Limit, res.ExitCode, res.Stderr)
				}
			}},
		{"gradual memory", "l = []\nwhile True: l.append(b'x' * (1 << 20))", sandbox.Limits{Memory: 96 << 20},
			func(t *testing.T, res *sandbox.Result) {
				if res.Limit != sandbox.LimitMemory {
					t.Errorf("Limit=%q exit %d stderr %q", res.Limit, res.ExitCode, res.Stderr)
				}
			}},
		{"fork bomb", `import os, time
n = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(100)
            os._exit(0)
        n += 1
except OSError as e:
    print("stopped", e.errno)`, sandbox.Limits{Processes: 32, Timeout: 10 * time.Second},
			func(t *testing.T, res *sandbox.Result) {
				if !strings.HasPrefix(string(res.Stdout), "stopped 11") || res.Limit != sandbox.LimitProcesses {
					t.Errorf("stdout %q Limit %q, want stopped by EAGAIN and processes", res.Stdout, res.Limit)
				}
			}},
		{"thread bomb", `import threading, time
n = 0
try:
    while True:
        threading.Thread(target=time.sleep, args=(100,), daemon=True).start()
        n += 1
except RuntimeError:
    print("stopped at", n)`, sandbox.Limits{Processes: 32, Timeout: 10 * time.Second},
			func(t *testing.T, res *sandbox.Result) {
				if !strings.HasPrefix(string(res.Stdout), "stopped at") {
					t.Errorf("stdout %q stderr %q", res.Stdout, res.Stderr)
				}
			}},
		{"disk fill", `import errno
for path in ("/tmp/fill", "/mnt/data/fill"):
    try:
        with open(path, "wb") as f:
            while True:
                f.write(b"x" * (1 << 20))
    except OSError as e:
        print(path, errno.errorcode[e.errno])`, sandbox.Limits{DiskSize: 8 << 20},
			func(t *testing.T, res *sandbox.Result) {
				for _, line := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
					if !strings.HasSuffix(line, "ENOSPC") && !strings.HasSuffix(line, "EFBIG") {
						t.Errorf("line %q, want ENOSPC or EFBIG", line)
					}
				}
				if res.Limit != sandbox.LimitDisk {
					t.Errorf("Limit %q, want disk", res.Limit)
				}
			}},
		{"100 MB of output", "import sys\nfor _ in range(100):\n    sys.stdout.write('x' * (1 << 20))\nprint('done', file=sys.stderr)", sandbox.Limits{},
			func(t *testing.T, res *sandbox.Result) {
				if !res.StdoutTruncated || res.StdoutSize != 100<<20 || int64(len(res.Stdout)) != sandbox.DefaultOutputSize {
					t.Errorf("truncated=%v size=%d kept=%d", res.StdoutTruncated, res.StdoutSize, len(res.Stdout))
				}
				if string(res.Stderr) != "done\n" || res.ExitCode != 0 {
					t.Errorf("the run did not go on past the cap: stderr %q exit %d", res.Stderr, res.ExitCode)
				}
			}},
		{"open files", "import os\nfds = []\ntry:\n    while True: fds.append(os.open('/dev/null', 0))\nexcept OSError as e:\n    print(len(fds) < 64, e.errno)", sandbox.Limits{OpenFiles: 64},
			func(t *testing.T, res *sandbox.Result) {
				if string(res.Stdout) != "True 24\n" {
					t.Errorf("stdout %q stderr %q, want EMFILE below 64", res.Stdout, res.Stderr)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, s, tc.code, tc.lim)
			tc.check(t, res)
			assertNoLeftovers(t)
			stillWorks(t, s)
		})
	}
}

// TestBackgroundProcessDies leaves a daemon behind and checks it is gone.
func TestBackgroundProcessDies(t *testing.T) {
	s := newTestSandbox(t)
	marker := fmt.Sprintf("sandpiper-marker-%d", time.Now().UnixNano())
	code := `import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time\nwhile True: time.sleep(1)", "` + marker + `"])
    os._exit(0)
time.sleep(0.2)
print("parent done")`
	res := run(t, s, code, sandbox.Limits{})
	if string(res.Stdout) != "parent done\n" {
		t.Fatalf("stdout %q stderr %q", res.Stdout, res.Stderr)
	}
	if pids := hostProcessesWith(marker); len(pids) > 0 {
		t.Errorf("background process still running on the host: pids %v", pids)
	}
	assertNoLeftovers(t)
}

func TestNoPersistence(t *testing.T) {
	s := newTestSandbox(t)
	run(t, s, "open('/mnt/data/mark', 'w').write('1'); open('/tmp/mark', 'w').write('1'); open('/dev/shm/mark', 'w').write('1')", sandbox.Limits{})
	res := run(t, s, "import os; print([os.path.exists(p) for p in ('/mnt/data/mark', '/tmp/mark', '/dev/shm/mark')])", sandbox.Limits{})
	if got := string(res.Stdout); got != "[False, False, False]\n" {
		t.Errorf("files of an earlier run visible: %s", got)
	}
}

func TestConcurrentRunsAreInvisibleToEachOther(t *testing.T) {
	s := newTestSandbox(t)
	code := `import os, time
open("/tmp/me-%d" % os.getpid(), "w").write("x")
time.sleep(0.5)
print([n for n in os.listdir("/tmp") if n.startswith("me-")] == ["me-%d" % os.getpid()], sorted(int(p) for p in os.listdir("/proc") if p.isdigit()) == [1, os.getpid()])`
	var wg sync.WaitGroup
	outs := make([]string, 2)
	for i := range outs {
		wg.Go(func() {
			res, err := s.Run(t.Context(), sandbox.Request{Code: code})
			if err != nil {
				t.Error(err)
				return
			}
			outs[i] = string(res.Stdout) + string(res.Stderr)
		})
	}
	wg.Wait()
	for i, o := range outs {
		if o != "True True\n" {
			t.Errorf("run %d saw another: %q", i, o)
		}
	}
}

func TestFiles(t *testing.T) {
	s := newTestSandbox(t)
	in := []sandbox.File{
		{Name: "data.csv", Data: []byte("x,y\n1,2\n3,4\n")},
		{Name: "keep.txt", Data: []byte("unchanged")},
		{Name: "sub/dir/notes.txt", Data: []byte("nested")},
	}
	code := `import csv, os
rows = list(csv.DictReader(open("data.csv")))
print(sum(int(r["y"]) for r in rows), open("sub/dir/notes.txt").read())
open("out.txt", "w").write("result")
open("data.csv", "a").write("5,6\n")
os.symlink("/etc/passwd", "link")
os.mkfifo("fifo")
os.makedirs("plots")
open("plots/a.svg", "w").write("<svg/>")`
	res := run(t, s, code, sandbox.Limits{}, in...)
	if string(res.Stdout) != "6 nested\n" {
		t.Fatalf("stdout %q stderr %q", res.Stdout, res.Stderr)
	}
	var names []string
	for _, f := range res.Files {
		names = append(names, f.Name+"="+string(f.Data))
	}
	want := []string{"data.csv=x,y\n1,2\n3,4\n5,6\n", "out.txt=result", "plots/a.svg=<svg/>"}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("files = %q, want %q", names, want)
	}
	if fmt.Sprint(res.FilesOmitted) != "[fifo (not a regular file) link (not a regular file)]" {
		t.Errorf("omitted = %q", res.FilesOmitted)
	}

	t.Run("limits", func(t *testing.T) {
		res := run(t, s, "for i in range(5): open(f'f{i}', 'w').write('x' * 1000)\nopen('big', 'w').write('y' * 5000)", sandbox.Limits{Files: 3, DiskSize: 4 << 20})
		if len(res.Files) != 3 || len(res.FilesOmitted) != 3 {
			t.Errorf("files %d omitted %q, want 3 and 3", len(res.Files), res.FilesOmitted)
		}
	})
	t.Run("bad names", func(t *testing.T) {
		for _, name := range []string{"../../etc/passwd", "/etc/passwd", "a/../../b", "", ".", "a//b"} {
			_, err := s.Run(t.Context(), sandbox.Request{Code: "print(1)", Files: []sandbox.File{{Name: name, Data: []byte("x")}}})
			if err == nil {
				t.Errorf("name %q accepted", name)
			}
		}
	})
}

func TestCancel(t *testing.T) {
	s := newTestSandbox(t)
	marker := fmt.Sprintf("sandpiper-cancel-%d", time.Now().UnixNano())
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(500*time.Millisecond, cancel)
	start := time.Now()
	_, err := s.Run(ctx, sandbox.Request{Code: "import os, sys, time\nos.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(60)', '" + marker + "'])"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("cancel took %v", d)
	}
	if pids := hostProcessesWith(marker); len(pids) > 0 {
		t.Errorf("program still running after cancel: %v", pids)
	}
	assertNoLeftovers(t)
}

func TestConcurrencyBound(t *testing.T) {
	s, err := New(t.Context(), Config{Python: testPython(), Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(t.Context(), sandbox.Request{Code: "import time; time.sleep(1)"})
	}()
	if !eventually(10*time.Second, func() bool { return len(s.sem) == 1 }) {
		t.Fatal("the first run never took the slot")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := s.Run(ctx, sandbox.Request{Code: "print(1)"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("second run while the slot is taken: err = %v, want a deadline while waiting", err)
	}
	<-done
}

// TestPlotting needs matplotlib (python3-matplotlib); CI installs it.
func TestPlotting(t *testing.T) {
	if exec.Command(testPython(), "-c", "import matplotlib").Run() != nil {
		t.Skip("matplotlib is not installed for " + testPython())
	}
	s := newTestSandbox(t)
	res := run(t, s, `import glob, time
t = time.time()
import matplotlib.pyplot as plt
plt.plot([1, 2, 3], [2, 4, 1])
plt.title("test")
plt.savefig("chart.png")
print(bool(glob.glob("/tmp/.matplotlib/fontlist-*.json")))`, sandbox.Limits{})
	if string(res.Stdout) != "True\n" || res.ExitCode != 0 {
		t.Fatalf("stdout %q stderr %q: want a headless plot with the font cache prepared", res.Stdout, res.Stderr)
	}
	if len(res.Stderr) != 0 {
		t.Errorf("stderr %q, want nothing (no cache warnings)", res.Stderr)
	}
	if len(res.Files) != 1 || res.Files[0].Name != "chart.png" || !bytes.HasPrefix(res.Files[0].Data, []byte("\x89PNG")) {
		t.Errorf("files = %v, want chart.png", res.Files)
	}
}

func TestBadPython(t *testing.T) {
	_, err := New(t.Context(), Config{Python: "no-such-python-3"})
	if err == nil || !strings.Contains(err.Error(), "SANDPIPER_PYTHON") {
		t.Errorf("err = %v, want one naming SANDPIPER_PYTHON", err)
	}
}

func reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

// hostProcessesWith lists host processes whose command line holds s.
func hostProcessesWith(s string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if bytes.Contains(b, []byte(s)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// assertNoLeftovers checks that no run's cgroup outlives it for long: the
// teardown finishes in the background after Run returns.
func assertNoLeftovers(t *testing.T) {
	t.Helper()
	if shared == nil {
		return
	}
	var left []string
	var live int64
	if !eventually(5*time.Second, func() bool {
		left = nil
		for _, d := range shared.lastCgroup.Load().([]string) {
			if _, err := os.Stat(d); err == nil {
				left = append(left, d)
			}
		}
		// The pool holds up to Concurrency sandboxes (and cgroups) ahead.
		live = shared.liveCgroups.Load()
		return len(left) == 0 && live <= int64(shared.cfg.Concurrency+shared.maxWarm)
	}) {
		t.Errorf("cgroups left behind: %v; %d alive with %d kept ready", left, live, shared.cfg.Concurrency+shared.maxWarm)
	}
}

// eventually polls cond until it holds or timeout passes, and reports
// whether it held.
func eventually(timeout time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// TestShimResolved gives the sandbox a shell-script shim (as pyenv's) and
// checks that the real interpreter, not the shim, is what runs.
func TestShimResolved(t *testing.T) {
	dir := t.TempDir()
	shim := filepath.Join(dir, "python3")
	script := "#!/bin/sh\nexec " + testPython() + " \"$@\"\n"
	if err := os.WriteFile(shim, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	s, err := New(t.Context(), Config{Python: "python3", Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	real, _ := filepath.EvalSymlinks(testPython())
	if got := s.Python().Executable; got != real {
		t.Errorf("resolved %q, want %q", got, real)
	}
	res := run(t, s, "import os; print(os.path.exists("+strconv.Quote(shim)+"))", sandbox.Limits{})
	if string(res.Stdout) != "False\n" {
		t.Errorf("the shim's directory is visible in the sandbox: %q", res.Stdout)
	}
}

func TestExplainStartFailure(t *testing.T) {
	err := explainStartFailure(&sandbox.Error{Op: "start", Err: errors.New("operation not permitted")})
	for _, want := range []string{"cannot create a sandbox", "--security-opt seccomp=unconfined", "never run unsandboxed", "operation not permitted"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	err = explainStartFailure(&sandbox.Error{Op: "setup", Err: errors.New("mount /proc: operation not permitted")})
	for _, want := range []string{"fresh /proc", "systempaths=unconfined"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	if err := explainStartFailure(errors.New("boom")); !strings.Contains(err.Error(), "self-test failed: boom") {
		t.Errorf("other failures: %v", err)
	}
}

// TestUnprivileged runs the sandbox from a process without root's powers,
// as in a container: no cgroups, and init binds the host paths itself.
// The test binary re-runs itself as uid 65534, and as root with every
// capability dropped (Docker's --user 0), for the inner test.
func TestUnprivileged(t *testing.T) {
	if mode := os.Getenv("SANDPIPER_TEST_UNPRIVILEGED"); mode != "" {
		unprivilegedInner(t, mode)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("run as root to test the switch to an unprivileged user")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "sandpiper-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "local.test")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	args := []string{"-test.run", "^TestUnprivileged$", "-test.v"}
	for _, tc := range []struct {
		mode string
		cmd  func() (*exec.Cmd, error)
	}{
		{"nobody", func() (*exec.Cmd, error) {
			cmd := exec.Command(bin, args...)
			// A group that differs from the user: each must map on its own.
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobodyID, Gid: nogroupTestID}}
			return cmd, nil
		}},
		// Root with Docker's default capabilities: no CAP_SYS_ADMIN.
		{"root-docker-capabilities", func() (*exec.Cmd, error) {
			setpriv, err := exec.LookPath("setpriv")
			if err != nil {
				return nil, err
			}
			caps := "-all,+chown,+dac_override,+fowner,+fsetid,+kill,+setgid,+setuid,+setpcap,+net_bind_service,+net_raw,+sys_chroot,+mknod,+audit_write,+setfcap"
			return exec.Command(setpriv, append([]string{"--bounding-set", caps, "--inh-caps", "-all", bin}, args...)...), nil
		}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			cmd, err := tc.cmd()
			if err != nil {
				t.Skip(err)
			}
			cmd.Env = []string{"SANDPIPER_TEST_UNPRIVILEGED=" + tc.mode, "PATH=/usr/bin:/bin", "HOME=/tmp", "SANDPIPER_TEST_PYTHON=" + testPython()}
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err != nil || !bytes.Contains(out, []byte("--- PASS: TestUnprivileged")) {
				t.Fatalf("%s: %v\n%s", tc.mode, err, out)
			}
		})
	}
}

// nogroupTestID is the unprivileged test's group, other than its user.
const nogroupTestID = 65533

func unprivilegedInner(t *testing.T, mode string) {
	// Warm runs, as in the shared sandbox: every run below is warm.
	s, err := New(t.Context(), Config{Python: testPython(), Concurrency: 1, Preload: testPreload(), PrepareCaches: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	<-s.cachesDone
	alwaysWarm(s)
	if s.cgroups != nil || s.canCloneTrees {
		t.Fatalf("cgroups %v, clone trees %v: want neither without root's powers", s.cgroups, s.canCloneTrees)
	}
	uid, gid := strconv.Itoa(nobodyID), strconv.Itoa(nogroupTestID)
	if mode == "root-docker-capabilities" {
		gid = strconv.Itoa(nobodyID) // root maps both to nobody
	}
	res := run(t, s, `import os, socket
assert os.getuid() == 1000
assert open("/proc/self/uid_map").read().split() == ["1000", "`+uid+`", "1"]
assert open("/proc/self/gid_map").read().split() == ["1000", "`+gid+`", "1"]
assert not os.path.exists("/home") and not os.path.exists("/root")
try:
    open("/usr/x", "w")
    raise SystemExit("wrote /usr")
except OSError:
    pass
try:
    socket.create_connection(("1.1.1.1", 53), timeout=1)
    raise SystemExit("network")
except OSError:
    pass
print("OK")`, sandbox.Limits{})
	if string(res.Stdout) != "OK\n" {
		t.Fatalf("stdout %q stderr %q", res.Stdout, res.Stderr)
	}
	// The data stack reserves ~300 MB of address space before any data;
	// BLAS threads must still get their buffers within the default limit.
	res = run(t, s, `import importlib.util
mods = ["numpy", "pandas", "scipy", "matplotlib"]
if all(importlib.util.find_spec(m) for m in mods):
    import numpy, pandas, scipy.stats, matplotlib.pyplot as plt
    df = pandas.DataFrame({"a": numpy.arange(1e6)})
    assert numpy.ones((300, 300)).dot(numpy.ones((300, 300)))[0, 0] == 300
    x = bytearray(200 << 20)
    plt.plot(df.a[:100]); plt.savefig("x.png")
print("OK")`, sandbox.Limits{Timeout: 20 * time.Second})
	if string(res.Stdout) != "OK\n" {
		t.Errorf("data stack without cgroups: exit %d, limit %q, stdout %q, stderr %q", res.ExitCode, res.Limit, res.Stdout, lastLine(res.Stderr))
	}
	res = run(t, s, "x = bytearray(1 << 30)", sandbox.Limits{Memory: 64 << 20})
	if res.Limit != sandbox.LimitMemory {
		t.Errorf("memory bomb without cgroups: %+v, stderr %q", res, res.Stderr)
	}
	res = run(t, s, "import os\ntry:\n    [os.fork() or __import__('time').sleep(5) for _ in range(200)]\nexcept OSError as e:\n    print('stopped', e.errno)", sandbox.Limits{Processes: 16, Timeout: 10 * time.Second})
	if !strings.HasPrefix(string(res.Stdout), "stopped 11") {
		t.Errorf("fork bomb without cgroups: stdout %q stderr %q", res.Stdout, res.Stderr)
	}
	// The whole sandbox's memory, without cgroups: init's watcher.
	t.Run("memory", func(t *testing.T) { checkSandboxMemory(t, s) })
	t.Run("kernel memory", func(t *testing.T) { checkKernelMemory(t, newColdSandbox(t)) })
	// No CPU quota without cgroups, and no cap claiming one.
	res = run(t, s, cpuBurn(0.3), sandbox.Limits{CPUs: 0.2})
	if res.ExitCode != 0 || slices.Contains(res.Caps, sandbox.CapCPUQuota) {
		t.Errorf("CPU burn without cgroups: exit %d caps %v stderr %q", res.ExitCode, res.Caps, res.Stderr)
	}
	// Warm runs without cgroups: the watcher and the rlimits.
	t.Run("warm share nothing", func(t *testing.T) { checkWarmShareNothing(t, s) })
	t.Run("conformance", func(t *testing.T) {
		sandboxtest.TestRunner(t, func(*testing.T) sandboxtest.Runner { return s })
	})
	t.Run("warm runs differ", func(t *testing.T) { checkWarmRunsDiffer(t, s) })
	t.Run("warm limits", func(t *testing.T) { checkWarmLimits(t, s) })
}

// TestSweep removes the cgroups a dead bot process left behind, and
// nothing of a live one.
func TestSweep(t *testing.T) {
	s := newTestSandbox(t)
	if s.cgroups == nil {
		t.Skip("no cgroups on this host (or not root)")
	}
	base := filepath.Dir(s.cgroups.pids)
	dead := filepath.Join(base, "p999999999") // above pid_max: never alive
	if err := os.MkdirAll(filepath.Join(dead, "0123456789abcdef"), 0o755); err != nil {
		t.Fatal(err)
	}
	sweep(base)
	if _, err := os.Stat(dead); err == nil {
		t.Errorf("%s left after the sweep", dead)
		os.Remove(filepath.Join(dead, "0123456789abcdef"))
		os.Remove(dead)
	}
	if _, err := os.Stat(s.cgroups.pids); err != nil {
		t.Errorf("the live process's group was removed: %v", err)
	}
	stillWorks(t, s)
}

// TestFailClosed checks that a limit the sandbox cannot set ends the run
// with an error naming the call, instead of running the program without
// it. No process may raise RLIMIT_NOFILE above the kernel's nr_open.
func TestFailClosed(t *testing.T) {
	s := newTestSandbox(t)
	_, err := s.Run(t.Context(), sandbox.Request{Code: "print('ran')", Limits: sandbox.Limits{OpenFiles: 1 << 30}})
	if err == nil || !strings.Contains(err.Error(), "setrlimit(RLIMIT_NOFILE)") {
		t.Fatalf("err = %v, want one naming setrlimit(RLIMIT_NOFILE)", err)
	}
	stillWorks(t, s)
}

func TestNULInCodeRefused(t *testing.T) {
	s := newTestSandbox(t)
	_, err := s.Run(t.Context(), sandbox.Request{Code: "print('shown')\x00import os; os.system('x')"})
	if !errors.Is(err, sandbox.ErrNULInCode) {
		t.Fatalf("err = %v, want ErrNULInCode", err)
	}
}

// TestOneShot checks a sandbox for one run: it works, and builds nothing
// ahead of the run nor after it.
func TestOneShot(t *testing.T) {
	s, err := New(t.Context(), Config{Python: testPython(), OneShot: true, PrepareCaches: true, ProbeCache: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := len(s.pool); n != 0 {
		t.Errorf("%d sandboxes built at start-up, want none", n)
	}
	res := run(t, s, "import sys; print(6 * 7, len(sys.modules) < 100)", sandbox.Limits{})
	if got := string(res.Stdout); got != "42 True\n" {
		t.Errorf("stdout %q, want %q; stderr %s", got, "42 True\n", res.Stderr)
	}
	if n := len(s.pool); n != 0 {
		t.Errorf("%d sandboxes built after the run, want none", n)
	}
	select {
	case <-s.cachesDone:
	default:
		t.Error("caches are being prepared for a one-shot sandbox")
	}
}
