//go:build linux && cgo && (amd64 || arm64)

package local

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

const benchCode = "print(5 + 5 - 84**3)"

// runner is one way of running benchCode once.
type benchRunner func(ctx context.Context) error

// benchRunners are the local sandbox and, measured in the same run, the
// baselines: bare python3 -c, and bubblewrap with a comparable lock-down
// (skipped where bwrap is not installed).
func benchRunners(b *testing.B) map[string]benchRunner {
	s := newTestSandbox(b)
	py := s.python.Executable
	rs := map[string]benchRunner{
		"sandpiper": func(ctx context.Context) error {
			res, err := s.Run(ctx, sandbox.Request{Code: benchCode})
			if err == nil && string(res.Stdout) != "-592694\n" {
				b.Fatalf("stdout %q stderr %q", res.Stdout, res.Stderr)
			}
			return err
		},
		"bare": func(ctx context.Context) error {
			return exec.CommandContext(ctx, py, "-c", benchCode).Run()
		},
	}
	if bwrap, err := exec.LookPath("bwrap"); err == nil {
		rs["bwrap"] = func(ctx context.Context) error {
			return exec.CommandContext(ctx, bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--clearenv",
				"--setenv", "PATH", "/usr/bin", "--uid", "65534", "--gid", "65534", "--cap-drop", "ALL",
				"--hostname", "sandbox", "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib",
				"--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin", "--proc", "/proc",
				"--dev", "/dev", "--tmpfs", "/tmp", "--chdir", "/tmp", py, "-c", benchCode).Run()
		}
	}
	return rs
}

// cpuTime is the CPU time used so far by this process, its waited-for
// children and the sandbox's zygote with the inits it reaped (user and
// system).
func cpuTime() time.Duration {
	var self, kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	total := tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
	if shared != nil && shared.zygote != nil {
		// /proc/PID/stat fields 14-17: utime stime cutime cstime, in ticks.
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", shared.zygote.proc.Pid))
		if i := bytes.LastIndexByte(b, ')'); i > 0 {
			f := strings.Fields(string(b[i+2:]))
			for _, s := range f[11:15] {
				n, _ := strconv.ParseInt(s, 10, 64)
				total += time.Duration(n) * time.Second / 100 // USER_HZ
			}
		}
	}
	return total
}

// BenchmarkRun measures one run at a time, back to back; p50-ms is the
// median and cpu-ms/op the CPU time of everything involved.
func BenchmarkRun(b *testing.B) { benchmarkRun(b, 0) }

// BenchmarkRunPaced leaves 50 ms between runs, as a chat does (a model call
// comes between two runs), so the sandboxes kept ready are ready.
func BenchmarkRunPaced(b *testing.B) { benchmarkRun(b, 50*time.Millisecond) }

func benchmarkRun(b *testing.B, pause time.Duration) {
	for _, name := range []string{"bare", "bwrap", "sandpiper"} {
		b.Run(name, func(b *testing.B) {
			r, ok := benchRunners(b)[name]
			if !ok {
				b.Skip(name + " is not installed")
			}
			durs := make([]time.Duration, 0, b.N)
			cpu0 := cpuTime()
			for b.Loop() {
				start := time.Now()
				if err := r(b.Context()); err != nil {
					b.Fatal(err)
				}
				durs = append(durs, time.Since(start))
				if pause > 0 {
					b.StopTimer()
					time.Sleep(pause)
					b.StartTimer()
				}
			}
			cpu := cpuTime() - cpu0
			slices.Sort(durs)
			b.ReportMetric(float64(durs[len(durs)/2])/1e6, "p50-ms")
			b.ReportMetric(float64(cpu)/1e6/float64(len(durs)), "cpu-ms/op")
		})
	}
}

// BenchmarkRunParallel measures runs per second with one run per CPU in
// flight (the local sandbox's default concurrency).
func BenchmarkRunParallel(b *testing.B) {
	for _, name := range []string{"bare", "bwrap", "sandpiper"} {
		b.Run(name, func(b *testing.B) {
			r, ok := benchRunners(b)[name]
			if !ok {
				b.Skip(name + " is not installed")
			}
			var mu sync.Mutex
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := r(context.Background()); err != nil {
						mu.Lock()
						b.Error(err)
						mu.Unlock()
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "runs/s")
		})
	}
}

// BenchmarkOverhead runs /usr/bin/true instead of Python, so that what is
// measured is the sandbox alone: "bare" forks and execs it, "sandpiper"
// gives it a fresh sandbox (paced, 20 ms apart, like BenchmarkRunPaced).
func BenchmarkOverhead(b *testing.B) {
	const truePath = "/usr/bin/true"
	if _, err := os.Stat(truePath); err != nil {
		b.Skip(truePath + " is missing")
	}
	b.Run("bare", func(b *testing.B) {
		benchLoop(b, 20*time.Millisecond, func() error { return exec.Command(truePath).Run() })
	})
	b.Run("sandpiper", func(b *testing.B) {
		s, err := New(b.Context(), Config{Python: testPython()})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		s.python.Executable = truePath // what init execs
		s.setup.Store(nil)             // re-encode the setup with it
		s.drainPool()                  // and build the ready sandboxes again
		s.wantMore()
		prev := shared
		shared = s // for cpuTime's zygote accounting
		defer func() { shared = prev }()
		time.Sleep(200 * time.Millisecond) // let the pool fill
		benchLoop(b, 20*time.Millisecond, func() error {
			res, err := s.Run(b.Context(), sandbox.Request{Code: "unused"})
			if err == nil && res.ExitCode != 0 {
				b.Fatalf("exit %d: %s", res.ExitCode, res.Stderr)
			}
			return err
		})
	})
}

func benchLoop(b *testing.B, pause time.Duration, run func() error) {
	durs := make([]time.Duration, 0, b.N)
	cpu0 := cpuTime()
	for b.Loop() {
		start := time.Now()
		if err := run(); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(start))
		b.StopTimer()
		time.Sleep(pause)
		b.StartTimer()
	}
	time.Sleep(100 * time.Millisecond) // let the last teardown be counted
	cpu := cpuTime() - cpu0
	slices.Sort(durs)
	b.ReportMetric(float64(durs[len(durs)/2])/1e6, "p50-ms")
	b.ReportMetric(float64(cpu)/1e6/float64(len(durs)), "cpu-ms/op")
}

// BenchmarkWatcher measures the CPU time of runs that hold memory, for
// the cost of init's memory watcher (which runs without a memory cgroup:
// run the benchmark as a user other than root, once with the watcher and
// once without, to compare): a run that prints, one that holds 300 MB for
// a second (cheap looks: the resident sum is below the limit), and four
// workers sharing a 120 MB array for a second (exact looks: the resident
// sum counts it five times).
func BenchmarkWatcher(b *testing.B) {
	for _, bc := range []struct{ name, code string }{
		{"print", benchCode},
		{"300MB-1s", "import time\nx = b'x' * (300 << 20)\ntime.sleep(1)"},
		{"pool-sharing-120MB-1s", `import multiprocessing as mp, time
x = bytearray(b'x' * (120 << 20))
def work(i):
    time.sleep(1)
    return x[i]
with mp.Pool(4) as p:
    p.map(work, range(4))`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := newTestSandbox(b)
			watch0 := s.watchCPU.Load()
			benchLoop(b, 0, func() error {
				res, err := s.Run(b.Context(), sandbox.Request{Code: bc.code})
				if err == nil && (res.ExitCode != 0 || res.Limit == sandbox.LimitMemory) {
					b.Fatalf("exit %d, limit %q: %s", res.ExitCode, res.Limit, res.Stderr)
				}
				return err
			})
			b.ReportMetric(float64(s.watchCPU.Load()-watch0)/1e6/float64(b.N), "watch-cpu-ms/op")
		})
	}
}
