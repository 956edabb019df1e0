//go:build linux && cgo && (amd64 || arm64)

package local

import (
	"slices"
	"strings"
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
