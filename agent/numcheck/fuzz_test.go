package numcheck

import (
	"strings"
	"testing"
	"time"
)

// FuzzCheck checks that Check does not panic, takes time in proportion
// to its input, reports only text of the answer, and finds every number
// of an answer in the answer itself.
func FuzzCheck(f *testing.F) {
	for _, c := range readCases(f) {
		out := ""
		if len(c.src.Runs) > 0 {
			out = c.src.Runs[0].Output
		}
		f.Add(c.answer, out)
	}
	f.Add("1.2 × 10⁻⁵ and 1.545,81 € and 671/1296 and $4.5M", "")
	f.Add("```python\n12.5\n", "1,2,3")
	f.Add(strings.Repeat("9", 400)+" 0."+strings.Repeat("1", 400), strings.Repeat("1e", 200))
	f.Add("1.2 x 10^{-999} 1e-999 10^-400", "1e400 1.0e-400")
	f.Fuzz(func(t *testing.T, answer, output string) {
		start := time.Now()
		got := Check(answer, Sources{Question: "q", Runs: []Run{{Code: output, Output: output}}})
		if d := time.Since(start); d > time.Second+time.Duration(len(answer)+len(output))*20*time.Microsecond {
			t.Errorf("Check took %v for %d+%d bytes", d, len(answer), len(output))
		}
		if len(got) > MaxAnswerNumbers {
			t.Errorf("reported %d numbers, more than %d", len(got), MaxAnswerNumbers)
		}
		for _, u := range got {
			if !strings.Contains(answer, u.Text) {
				t.Errorf("reported %q, not in the answer", u.Text)
			}
		}
		if self := Check(answer, Sources{Question: answer}); len(self) > 0 {
			t.Errorf("Check(%q) against itself reported %v", answer, self)
		}
	})
}
