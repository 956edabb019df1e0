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

var (
	benchOnce sync.Once
	benchSB   *Sandbox
	benchErr  error
	// benchSandboxes are the sandboxes whose zygotes' CPU time cpuTime
	// counts.
	benchMu        sync.Mutex
	benchSandboxes []*Sandbox
)

// newBenchSandbox returns a sandbox as the bot makes one, without
// preloading (the shared test sandbox's runs are all warm).
func newBenchSandbox(b *testing.B) *Sandbox {
	b.Helper()
	benchOnce.Do(func() {
		benchSB, benchErr = New(context.Background(), Config{Python: testPython(), PrepareCaches: true})
		if benchErr == nil {
			<-benchSB.cachesDone
			countCPU(benchSB)
		}
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchSB
}

// countCPU has cpuTime count s's zygote too.
func countCPU(s *Sandbox) {
	benchMu.Lock()
	benchSandboxes = append(benchSandboxes, s)
	benchMu.Unlock()
}

// benchRunners are the local sandbox and, measured in the same run, the
// baselines: bare python3 -c, and bubblewrap with a comparable lock-down
// (skipped where bwrap is not installed).
func benchRunners(b *testing.B) map[string]benchRunner {
	s := newBenchSandbox(b)
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
	benchMu.Lock()
	defer benchMu.Unlock()
	for _, s := range benchSandboxes {
		s.zmu.Lock()
		z := s.zygote
		s.zmu.Unlock()
		if z == nil {
			continue
		}
		// /proc/PID/stat fields 14-17: utime stime cutime cstime, in ticks.
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", z.proc.Pid))
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

// BenchmarkRunParallelTurns measures runs per second with two in flight,
// bare python3 -c and the sandbox taking turns in rounds of turnRuns runs
// each (b.N rounds), so that both see the same machine, however busy
// other work keeps it: it reports each one's median runs/s and the
// median, over the rounds, of the sandbox's share of bare Python's
// (BenchmarkRunParallel runs them one after the other).
func BenchmarkRunParallelTurns(b *testing.B) {
	const turnRuns = 40
	rs := benchRunners(b)
	names := []string{"bare", "sandpiper"}
	rates := map[string][]float64{}
	var shares []float64
	for b.Loop() {
		for _, name := range names {
			var next sync.WaitGroup
			runs := make(chan struct{}, turnRuns)
			for range turnRuns {
				runs <- struct{}{}
			}
			close(runs)
			start := time.Now()
			for range 2 {
				next.Go(func() {
					for range runs {
						if err := rs[name](context.Background()); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			next.Wait()
			rates[name] = append(rates[name], turnRuns/time.Since(start).Seconds())
		}
		shares = append(shares, rates["sandpiper"][len(rates["sandpiper"])-1]/rates["bare"][len(rates["bare"])-1])
	}
	median := func(xs []float64) float64 {
		xs = slices.Clone(xs)
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	for _, name := range names {
		b.ReportMetric(median(rates[name]), name+"-runs/s")
	}
	b.ReportMetric(100*median(shares), "%-of-bare")
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
		countCPU(s)
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
			s := newBenchSandbox(b)
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

// Warm runs. The data code imports what almost every data question does.
const dataCode = "import numpy, pandas, matplotlib.pyplot\nprint(pandas.__version__)"

var (
	warmBenchOnce sync.Once
	warmBenchOn   *Sandbox // preloading numpy, pandas and matplotlib.pyplot
	warmBenchOff  *Sandbox // the same without
	warmBenchErr  error
)

// newWarmBenchSandboxes returns two sandboxes as the bot makes them
// (Concurrency the number of CPUs, matplotlib's font cache), one with
// DefaultPreload and one without.
func newWarmBenchSandboxes(b *testing.B) (on, off *Sandbox) {
	b.Helper()
	if !hasDataStack() {
		b.Skip("numpy, pandas and matplotlib are not installed for " + testPython())
	}
	warmBenchOnce.Do(func() {
		ctx := context.Background()
		if warmBenchOn, warmBenchErr = New(ctx, Config{Python: testPython(), PrepareCaches: true, Preload: DefaultPreload}); warmBenchErr != nil {
			return
		}
		if warmBenchOff, warmBenchErr = New(ctx, Config{Python: testPython(), PrepareCaches: true}); warmBenchErr != nil {
			return
		}
		<-warmBenchOn.cachesDone
		<-warmBenchOff.cachesDone
		countCPU(warmBenchOn)
		countCPU(warmBenchOff)
	})
	if warmBenchErr != nil {
		b.Fatal(warmBenchErr)
	}
	return warmBenchOn, warmBenchOff
}

// settle waits until s keeps all the warm sandboxes it may and is warming
// none: it then takes no CPU while idle, and other measurements are not
// disturbed by it.
func settle(b *testing.B, s *Sandbox) {
	b.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		s.pmu.Lock()
		warm := 0
		for _, r := range s.pool {
			if r.warm == warmReady {
				warm++
			}
		}
		done := s.warmErr != nil || warm >= s.maxWarm && s.warming == nil
		err := s.warmErr
		s.pmu.Unlock()
		if err != nil {
			b.Fatal(err)
		}
		if done {
			return
		}
		s.wantMore()
		time.Sleep(10 * time.Millisecond)
	}
	b.Fatal("the pool did not finish warming")
}

// BenchmarkWarm runs one program at a chat's pace through bare python3
// -c, the sandbox without preloading (off) and with (on), taking them in
// turn in each iteration, so that all three see the same machine: "data"
// imports numpy, pandas and matplotlib.pyplot, "small" prints a number (a
// run importing only the standard library takes a cold sandbox even with
// preloading on). Between two runs of "on" its pool warms again, as it
// would during the model call between two runs of an answer; while it
// does, the others wait (settle), so that they do not compete with it.
// It reports each one's median run (p50-ms) and CPU time per run of
// everything involved (cpu-ms), for "on" the warm-up that follows its run
// included. An iteration takes about four seconds for "data": run with
// -benchtime 20x or so.
func BenchmarkWarm(b *testing.B) {
	const gap = 200 * time.Millisecond // between runs: the pools refill
	for _, prog := range []struct{ name, code, want string }{
		{"data", dataCode, ""},
		{"small", benchCode, "-592694\n"},
	} {
		b.Run(prog.name, func(b *testing.B) {
			on, off := newWarmBenchSandboxes(b)
			variants := []string{"bare", "off", "on"}
			durs := map[string][]time.Duration{}
			cpu := map[string]time.Duration{}
			warm := 0
			for b.Loop() {
				for _, v := range variants {
					b.StopTimer()
					settle(b, on)
					time.Sleep(gap)
					b.StartTimer()
					cpu0 := cpuTime()
					start := time.Now()
					var err error
					if v == "bare" {
						err = exec.Command(testPython(), "-c", prog.code).Run()
					} else {
						s := map[string]*Sandbox{"off": off, "on": on}[v]
						var res *sandbox.Result
						res, err = s.Run(b.Context(), sandbox.Request{Code: prog.code})
						if err == nil && (res.ExitCode != 0 || prog.want != "" && string(res.Stdout) != prog.want) {
							b.Fatalf("exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
						}
						if err == nil && v == "on" && res.Warm {
							warm++
						}
					}
					if err != nil {
						b.Fatal(err)
					}
					durs[v] = append(durs[v], time.Since(start))
					b.StopTimer()
					if v == "on" {
						settle(b, on) // its warm-up is its cost
					}
					time.Sleep(100 * time.Millisecond) // the teardown, counted
					cpu[v] += cpuTime() - cpu0
					b.StartTimer()
				}
			}
			for _, v := range variants {
				d := durs[v]
				slices.Sort(d)
				b.ReportMetric(float64(d[len(d)/2])/1e6, v+"-p50-ms")
				b.ReportMetric(float64(cpu[v])/1e6/float64(len(d)), v+"-cpu-ms")
			}
			b.ReportMetric(float64(warm)/float64(len(durs["on"])), "on-warm/op")
		})
	}
}

// BenchmarkWarmBurst measures runs per second of a burst of small runs
// (benchCode), Config.Concurrency at a time (one per CPU), through bare
// python3 -c and the sandbox with preloading off and on, in 5 rounds
// taken in turn; it reports each one's median. In each round "on" starts
// its burst just as a warm-up has started (a data run has just used a warm
// sandbox): the warm-up must not take the CPU the burst needs. Before the
// others' rounds "on" has finished warming, so that it takes no CPU.
func BenchmarkWarmBurst(b *testing.B) {
	const (
		rounds = 5
		runs   = 80 // per round
	)
	on, off := newWarmBenchSandboxes(b)
	concurrency := on.cfg.Concurrency
	burst := func(run func() error) float64 {
		var wg sync.WaitGroup
		next := make(chan struct{}, runs)
		for range runs {
			next <- struct{}{}
		}
		close(next)
		start := time.Now()
		for range concurrency {
			wg.Go(func() {
				for range next {
					if err := run(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		return runs / time.Since(start).Seconds()
	}
	sandboxRun := func(s *Sandbox) func() error {
		return func() error {
			res, err := s.Run(context.Background(), sandbox.Request{Code: benchCode})
			if err == nil && string(res.Stdout) != "-592694\n" {
				return fmt.Errorf("stdout %q stderr %q", res.Stdout, res.Stderr)
			}
			return err
		}
	}
	rates := map[string][]float64{}
	paused := 0
	for b.Loop() {
		for range rounds {
			settle(b, on)
			rates["bare"] = append(rates["bare"], burst(func() error { return exec.Command(testPython(), "-c", benchCode).Run() }))
			settle(b, on)
			rates["off"] = append(rates["off"], burst(sandboxRun(off)))
			settle(b, on)
			// Use a warm sandbox, and start the burst as the pool
			// starts warming the next.
			if res, err := on.Run(b.Context(), sandbox.Request{Code: dataCode}); err != nil || !res.Warm {
				b.Fatalf("data run: %v, warm %v", err, res != nil && res.Warm)
			}
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				on.pmu.Lock()
				w := on.warming != nil
				on.pmu.Unlock()
				if w {
					paused++
					break
				}
			}
			rates["on"] = append(rates["on"], burst(sandboxRun(on)))
		}
	}
	med := map[string]float64{}
	for k, v := range rates {
		slices.Sort(v)
		med[k] = v[len(v)/2]
		b.ReportMetric(med[k], k+"-runs/s")
	}
	b.ReportMetric(med["on"]/med["off"], "on/off")
	b.ReportMetric(float64(paused)/float64(len(rates["on"])), "bursts-during-warm-up")
	b.Logf("runs/s by round: %v", rates)
}
