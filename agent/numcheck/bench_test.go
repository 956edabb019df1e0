package numcheck

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"
)

// benchSources returns 10 runs, each printing a 16 KiB pandas-style
// table of floats, and an answer of 12 numbers taken from the last rows
// of the runs, as a model reports them (rounded, with separators,
// percentages), plus a year, a list and a date.
func benchSources() (string, Sources) {
	rng := rand.New(rand.NewPCG(1, 2))
	var src Sources
	src.Question = "Summarise the sales by region for 2023 and compare the quarters."
	var picked []float64
	for r := range 10 {
		var b strings.Builder
		b.WriteString("        count          sum         mean     share\nregion\n")
		for b.Len() < 16<<10 {
			fmt.Fprintf(&b, "R%-6d %6d %12.2f %12.6f %9.6f\n", rng.IntN(1000), rng.IntN(500), rng.Float64()*1e6, rng.Float64()*5e3, rng.Float64())
		}
		v := rng.Float64() * 1e6
		fmt.Fprintf(&b, "total: %v\nshare: %v\n", v, v/3e6)
		picked = append(picked, v, v/3e6)
		src.Runs = append(src.Runs, Run{Code: fmt.Sprintf("import pandas as pd\ndf = pd.read_csv('sales_%d.csv')\nprint(df.groupby('region').agg(['count', 'sum', 'mean']))", r), Output: b.String()})
	}
	var a strings.Builder
	a.WriteString("## Sales in 2023\n\n| Run | Total | Share |\n|---|---|---|\n")
	for i := 0; i < 12; i += 2 {
		fmt.Fprintf(&a, "| %d | $%s | %.1f%% |\n", i/2+1, thousands(picked[i]), picked[i+1]*100)
	}
	a.WriteString("\n1. Totals are as of 2024-01-05.\n2. Shares are of the 3 million target.\n")
	return a.String(), src
}

// thousands formats v with two decimals and comma separators.
func thousands(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	i := strings.IndexByte(s, '.')
	for j := i - 3; j > 0; j -= 3 {
		s = s[:j] + "," + s[j:]
	}
	return s
}

func BenchmarkCheck(b *testing.B) {
	answer, src := benchSources()
	if got := Check(answer, src); len(got) != 0 {
		b.Fatalf("the benchmark's answer reported %v", got)
	}
	invented := answer + "\nThe median order was $4,321.09.\n"
	if got := Check(invented, src); len(got) != 1 {
		b.Fatalf("the invented number: reported %v", got)
	}
	for _, bb := range []struct{ name, answer string }{
		{"all found", answer},
		{"one invented", invented}, // every source is read to the end
	} {
		b.Run(bb.name, func(b *testing.B) {
			b.SetBytes(int64(len(bb.answer) + 10*16<<10))
			b.ReportAllocs()
			cpu := cpuTime()
			n := 0
			for b.Loop() {
				Check(bb.answer, src)
				n++
			}
			// On a shared machine the CPU time tells more than ns/op.
			b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(n), "cpu-ns/op")
		})
	}
}

// cpuTime returns the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkLexSource reads one run's 16 KiB of output.
func BenchmarkLexSource(b *testing.B) {
	_, src := benchSources()
	b.SetBytes(int64(len(src.Runs[0].Output)))
	n := 0
	for b.Loop() {
		lexSource(src.Runs[0].Output, true, func(v, q float64) bool { n++; return true })
	}
	b.ReportMetric(float64(n)/float64(b.N), "numbers/op")
}
