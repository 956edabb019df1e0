//go:build linux && cgo && (amd64 || arm64)

package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// BenchmarkState measures what keeping state costs, at a chat's pace, in
// the sandbox the bot uses (numpy, pandas and matplotlib.pyplot
// preloaded): in each iteration, taken in turn,
//
//   - none: a run that keeps no state and prints what the next one does;
//   - state: the same run restoring a 10 MB DataFrame and 1,000 more
//     names, and saving them again after;
//   - csv: a run that keeps no state and reads the DataFrame again from
//     the CSV it came from (an input file), as a run had to before.
//
// It reports each one's median run (p50-ms), and the state run's median
// restore and save as the sandbox measured them. Run it alone: go test
// -run '^$' -bench State -benchtime 20x ./sandbox/local/.
func BenchmarkState(b *testing.B) {
	on, _ := newWarmBenchSandboxes(b)
	lim := sandbox.Limits{DiskSize: 256 << 20}
	const rows = 10 << 20 / 32 // four 8-byte columns: 10 MiB
	setup := `import numpy as np, pandas as pd
rng = np.random.default_rng(1)
df = pd.DataFrame({"id": np.arange(ROWS), "x": rng.random(ROWS), "y": rng.random(ROWS), "k": rng.integers(0, 100, ROWS)})
for i in range(1000):
    globals()["v%d" % i] = i * 1.5
df.to_csv("data.csv", index=False)
print(df.memory_usage(index=False).sum())`
	res, err := on.Run(b.Context(), sandbox.Request{Code: strings.ReplaceAll(setup, "ROWS", "327680"), KeepState: true, Limits: lim})
	if err != nil || res.ExitCode != 0 || res.State.Data == nil || len(res.Files) != 1 {
		b.Fatalf("setup: %v, stderr %q", err, res.Stderr)
	}
	state, csv := res.State.Data, res.Files[0]
	b.Logf("the DataFrame holds %s bytes; the state %d bytes, the CSV %d", strings.TrimSpace(string(res.Stdout)), len(state), len(csv.Data))

	const want = "(327680, 4) 1498.5\n"
	variants := []struct {
		name string
		req  sandbox.Request
	}{
		{"none", sandbox.Request{Code: "import pandas as pd\nprint((327680, 4), 1498.5)"}},
		{"state", sandbox.Request{Code: "print(df.shape, v999)", KeepState: true, State: state}},
		{"csv", sandbox.Request{Code: "import pandas as pd\ndf = pd.read_csv('data.csv')\nprint(df.shape, 999 * 1.5)", Files: []sandbox.File{csv}}},
	}
	durs := map[string][]time.Duration{}
	var restores, saves []time.Duration
	for b.Loop() {
		for _, v := range variants {
			b.StopTimer()
			settle(b, on)
			time.Sleep(200 * time.Millisecond)
			b.StartTimer()
			req := v.req
			req.Limits = lim
			start := time.Now()
			res, err := on.Run(b.Context(), req)
			if err != nil {
				b.Fatal(err)
			}
			durs[v.name] = append(durs[v.name], time.Since(start))
			if string(res.Stdout) != want || !res.Warm {
				b.Fatalf("%s: stdout %q (want %q), warm %v, stderr %q", v.name, res.Stdout, want, res.Warm, res.Stderr)
			}
			if s := res.State; s != nil {
				if s.Data == nil || s.RestoredCount != 1005 { // np, pd, rng, df, i and v0 … v999
					b.Fatalf("state: %d bytes saved, %d names restored, %q", len(s.Data), s.RestoredCount, s.Unsaved)
				}
				restores, saves = append(restores, s.RestoreTime), append(saves, s.SaveTime)
			}
		}
	}
	median := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2]) / 1e6
	}
	for _, v := range variants {
		b.ReportMetric(median(durs[v.name]), v.name+"-p50-ms")
	}
	b.ReportMetric(median(restores), "restore-p50-ms")
	b.ReportMetric(median(saves), "save-p50-ms")
}

// BenchmarkStateHostMemory measures what a stateful run costs the bot's
// own memory: each run restores a 48 MiB state from a file, and the state
// it saves is written back to the file; "stream" hands the file to the
// sandbox as the bot does (Request.StateFrom), "bytes" reads it whole
// first (Request.State, as a Redis store gives it). It reports the Go heap's peak above what it held before the
// run (peak-MiB, sampled every 200 µs, garbage not yet collected
// included) and the bytes allocated (alloc-MiB) per run. Run it alone:
// go test -run '^$' -bench StateHostMemory -benchtime 5x ./sandbox/local/.
func BenchmarkStateHostMemory(b *testing.B) {
	s := newTestSandbox(b)
	lim := sandbox.Limits{StateSize: 64 << 20}
	res, err := s.Run(b.Context(), sandbox.Request{Code: "b = bytes(48 << 20)", KeepState: true, Limits: lim})
	if err != nil || res.State == nil || res.State.Data == nil {
		b.Fatalf("setup: %v %+v", err, res)
	}
	path := filepath.Join(b.TempDir(), "state")
	if err := os.WriteFile(path, res.State.Data, 0o600); err != nil {
		b.Fatal(err)
	}
	res = nil
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "bytes", true: "stream"}[stream]
		b.Run(name, func(b *testing.B) { benchmarkHostMemory(b, s, path, lim, stream) })
	}
}

func benchmarkHostMemory(b *testing.B, s *Sandbox, path string, lim sandbox.Limits, stream bool) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/allocs:bytes"}}
	read := func() (heap, allocs uint64) {
		metrics.Read(sample)
		return sample[0].Value.Uint64(), sample[1].Value.Uint64()
	}
	var peaks, allocs float64
	for b.Loop() {
		runtime.GC()
		base, alloc0 := read()
		var peak atomic.Uint64
		done := make(chan struct{})
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			t := time.NewTicker(200 * time.Microsecond)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					if h, _ := read(); h > peak.Load() {
						peak.Store(h)
					}
				}
			}
		}()
		if err := statefulRun(b.Context(), s, path, lim, stream); err != nil {
			b.Fatal(err)
		}
		close(done)
		<-stopped
		h, alloc1 := read()
		peaks += float64(max(peak.Load(), h)-min(base, max(peak.Load(), h))) / (1 << 20)
		allocs += float64(alloc1-alloc0) / (1 << 20)
	}
	b.ReportMetric(peaks/float64(b.N), "peak-MiB")
	b.ReportMetric(allocs/float64(b.N), "alloc-MiB")
}

// statefulRun runs one stateful run as the bot does: the state streamed
// from path (Request.StateFrom) to the sandbox, and the one saved written
// back.
func statefulRun(ctx context.Context, s *Sandbox, path string, lim sandbox.Limits, stream bool) error {
	req := sandbox.Request{Code: "c = len(b)", KeepState: true, Limits: lim}
	if !stream {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		req.State = data
		return saveRun(ctx, s, req, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	req.StateFrom, req.StateLen = f, fi.Size()
	return saveRun(ctx, s, req, path)
}

// saveRun runs req, which it owns, and writes the state saved to path.
func saveRun(ctx context.Context, s *Sandbox, req sandbox.Request, path string) error {
	res, err := s.Run(ctx, req)
	if err != nil {
		return err
	}
	if res.State == nil || res.State.Data == nil {
		return fmt.Errorf("nothing saved: %+v", res.State)
	}
	return os.WriteFile(path, res.State.Data, 0o600)
}
