//go:build linux && cgo && (amd64 || arm64)

package local

import (
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// sandboxMemoryCases hold more memory than their limit in ways that a
// per-process limit misses (shared memory, many processes, memory that no
// process maps), and one that shares memory as multiprocessing does and
// must not be killed. TestSandboxMemory runs them with the host's cgroups,
// TestUnprivileged without (init's watcher). The limits are small, to
// keep the tests light; the timeouts long, for a loaded machine (a
// cgroup at its limit reclaims and kills slowly when the CPU is scarce).
var sandboxMemoryCases = []struct {
	name   string
	code   string
	lim    sandbox.Limits
	killed bool // the limit kills it (or, with a cgroup, some of its processes); else it prints "done"
	numpy  bool // needs numpy
}{
	{"MAP_SHARED 1.6 GB in one process", `import mmap
m = mmap.mmap(-1, 1600 << 20, flags=mmap.MAP_SHARED)
for i in range(0, len(m), 4096): m[i] = 1
print("done")`, sandbox.Limits{Memory: 256 << 20}, true, false},
	{"MAP_SHARED 1 GB in one process", `import mmap
m = mmap.mmap(-1, 1000 << 20, flags=mmap.MAP_SHARED)
for i in range(0, len(m), 4096): m[i] = 1
print("done")`, sandbox.Limits{Memory: 128 << 20}, true, false},
	{"8 children of 100 MB", `import os, time
kids = []
for i in range(8):
    pid = os.fork()
    if pid == 0:
        x = b"x" * (100 << 20)
        time.sleep(3)
        os._exit(0)
    kids.append(pid)
for k in kids: os.waitpid(k, 0)
print("done")`, sandbox.Limits{Memory: 512 << 20, Timeout: time.Minute}, true, false},
	// Forked children share their parent's 96 MB until each writes its
	// own copy: the sum of resident memory counts it 17 times from the
	// start, so every look must be exact, and looks cost more.
	{"16 children writing the 96 MB they share", `import os, time
x = bytearray(b"x" * (96 << 20))
kids = []
for i in range(16):
    pid = os.fork()
    if pid == 0:
        for j in range(0, len(x), 4096): x[j] = 1
        time.sleep(3)
        os._exit(0)
    kids.append(pid)
for k in kids: os.waitpid(k, 0)
print("done")`, sandbox.Limits{Memory: 256 << 20, Timeout: time.Minute}, true, false},
	{"System V segments of 1 GB, detached", `import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
for i in range(10):
    id = libc.shmget(0, 100 << 20, 0o600 | 0o1000)
    if id < 0:
        raise SystemExit("shmget refused: %d" % ctypes.get_errno())
    p = libc.shmat(id, None, 0)
    ctypes.memset(p, 1, 100 << 20)
    libc.shmdt(ctypes.c_void_p(p))
print("done")`, sandbox.Limits{Memory: 128 << 20}, true, false},
	// A memfd filled with write() is mapped by no process: memfd_create
	// is refused, as by a kernel without it (init's watcher also counts
	// memfds held open, should one be made another way).
	{"memfd_create refused", `import errno, os
try:
    os.memfd_create("f")
except OSError as e:
    assert e.errno == errno.ENOSYS, e
    print("done")`, sandbox.Limits{Memory: 128 << 20}, false, false},
	// The parent's 120 MB array is shared with four workers: five times
	// over in their resident memory, once in their proportional shares.
	{"multiprocessing pool sharing an array", `import multiprocessing as mp, numpy as np
big = np.ones(15_000_000)
def work(i):
    return float(big[i::8].sum() + (np.ones((200, 200)) @ np.ones((200, 200)))[0, 0])
with mp.Pool(4) as p:
    assert len(p.map(work, range(16))) == 16
print("done")`, sandbox.Limits{Timeout: time.Minute}, false, true},
}

func hasNumpy() bool { return exec.Command(testPython(), "-c", "import numpy").Run() == nil }

// checkSandboxMemory runs sandboxMemoryCases in s.
func checkSandboxMemory(t *testing.T, s *Sandbox) {
	for _, tc := range sandboxMemoryCases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.numpy && !hasNumpy() {
				t.Skip("numpy is not installed for " + testPython())
			}
			res := run(t, s, tc.code, tc.lim)
			if !tc.killed {
				if string(res.Stdout) != "done\n" || res.Limit != sandbox.LimitNone {
					t.Errorf("stdout %q, Limit %q, stderr %q: want it to run to its end", res.Stdout, res.Limit, lastLine(res.Stderr))
				}
				return
			}
			if res.Limit != sandbox.LimitMemory || !slices.Contains(res.Caps, sandbox.CapMemory) {
				t.Errorf("stdout %q exit %d Limit %q Caps %v stderr %q: want the memory limit", res.Stdout, res.ExitCode, res.Limit, res.Caps, lastLine(res.Stderr))
			}
			stillWorks(t, s)
		})
	}
}

func TestSandboxMemory(t *testing.T) {
	s := newTestSandbox(t)
	if s.cgroups == nil {
		t.Skip("no cgroups on this host (or not root); TestUnprivileged runs these without")
	}
	checkSandboxMemory(t, s)
}

// cpuBurn keeps two processes busy for seconds of wall time and prints
// the CPU time they used per second of wall time.
func cpuBurn(seconds float64) string {
	return `import os, time
start = time.time()
kids = []
for _ in range(2):
    pid = os.fork()
    if pid == 0:
        while time.time() - start < ` + strconv.FormatFloat(seconds, 'g', -1, 64) + `: pass
        os._exit(0)
    kids.append(pid)
for k in kids: os.waitpid(k, 0)
t = os.times()
print("%.3f" % ((t.children_user + t.children_system) / (time.time() - start)))`
}

// TestCPUQuota checks that a run gets no more than its CPUs. The bounds
// are loose, and the machine may be busy with other work: then the ratio
// is lower anyway, and only a quota well below what the machine gives
// must show the cap.
func TestCPUQuota(t *testing.T) {
	s := newTestSandbox(t)
	if !s.cgroups.hasCPU() {
		t.Skip("no cgroup cpu controller on this host (or not root)")
	}
	for _, tc := range []struct {
		cpus     float64 // 0: the default, 1
		max      float64 // CPU seconds per wall second
		throttle bool    // the cap must fire
	}{{0, 1.25, false}, {0.2, 0.3, true}} {
		t.Run(strconv.FormatFloat(tc.cpus, 'g', -1, 64), func(t *testing.T) {
			res := run(t, s, cpuBurn(2), sandbox.Limits{CPUs: tc.cpus})
			ratio, err := strconv.ParseFloat(strings.TrimSpace(string(res.Stdout)), 64)
			if err != nil {
				t.Fatalf("stdout %q stderr %q", res.Stdout, res.Stderr)
			}
			if ratio > tc.max {
				t.Errorf("%.2f CPU seconds per second, want at most %.2f", ratio, tc.max)
			}
			if tc.throttle && !slices.Contains(res.Caps, sandbox.CapCPUQuota) {
				t.Errorf("caps %v, want %q", res.Caps, sandbox.CapCPUQuota)
			}
			if res.Limit != sandbox.LimitNone || res.ExitCode != 0 {
				t.Errorf("limit %q exit %d: a throttled run is not ended", res.Limit, res.ExitCode)
			}
		})
	}
	// A warm run right after its warm-up: the imports may have used the
	// current period's quota, which the run must not inherit.
	res := run(t, s, "print(1)", sandbox.Limits{})
	if slices.Contains(res.Caps, sandbox.CapCPUQuota) {
		t.Errorf("caps %v on a run that used next to no CPU", res.Caps)
	}
}
