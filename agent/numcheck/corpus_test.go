package numcheck

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A corpusCase is one file of testdata/cases (see testdata/README.md).
type corpusCase struct {
	name   string
	note   string
	answer string
	src    Sources
	want   []string
}

// readCases reads testdata/cases/*.txtar.
func readCases(t testing.TB) []corpusCase {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "cases", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []corpusCase
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		c := corpusCase{name: strings.TrimSuffix(filepath.Base(p), ".txtar")}
		note, files := parseTxtar(string(data))
		c.note = strings.TrimSpace(note)
		var code string
		for _, f := range files {
			switch name := f[0]; {
			case name == "question":
				c.src.Question = f[1]
			case name == "file":
				c.src.Files = append(c.src.Files, f[1])
			case name == "earlier":
				c.src.Earlier = append(c.src.Earlier, f[1])
			case strings.HasSuffix(name, ".py"):
				code = f[1]
			case strings.HasSuffix(name, ".out"):
				c.src.Runs = append(c.src.Runs, Run{Code: code, Output: f[1]})
			case name == "answer.md":
				c.answer = f[1]
			case name == "want":
				for line := range strings.Lines(f[1]) {
					if w := strings.TrimSpace(line); w != "" {
						c.want = append(c.want, w)
					}
				}
			default:
				t.Fatalf("%s: unknown file %q", p, name)
			}
		}
		if c.answer == "" {
			t.Fatalf("%s: no answer.md", p)
		}
		cases = append(cases, c)
	}
	return cases
}

// parseTxtar splits a txtar archive into its comment and its files
// (name, content).
func parseTxtar(s string) (comment string, files [][2]string) {
	var name string
	var body strings.Builder
	inFile := false
	for line := range strings.Lines(s) {
		if strings.HasPrefix(line, "-- ") && strings.HasSuffix(strings.TrimRight(line, "\n"), " --") {
			if inFile {
				files = append(files, [2]string{name, body.String()})
			} else {
				comment = body.String()
			}
			name = strings.TrimSuffix(strings.TrimPrefix(strings.TrimRight(line, "\n"), "-- "), " --")
			body.Reset()
			inFile = true
			continue
		}
		body.WriteString(line)
	}
	if inFile {
		files = append(files, [2]string{name, body.String()})
	} else {
		comment = body.String()
	}
	return comment, files
}

// TestCorpus checks every case of the corpus: a number reported that the
// case does not expect is a false alarm and fails the test; a number
// expected but not reported is a miss, logged.
func TestCorpus(t *testing.T) {
	cases := readCases(t)
	if len(cases) < 40 {
		t.Fatalf("the corpus has %d cases, want at least 40", len(cases))
	}
	var expected, alarms, misses int
	for _, c := range cases {
		var got []string
		for _, u := range Check(c.answer, c.src) {
			got = append(got, u.Text)
		}
		expected += len(c.want)
		for _, g := range got {
			if !slices.Contains(c.want, g) {
				alarms++
				t.Errorf("%s: false alarm %q (reported %q, want %q)", c.name, g, got, c.want)
			}
		}
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				misses++
				t.Logf("%s: missed %q (%s)", c.name, w, c.note)
			}
		}
		if i := slices.IndexFunc(got, func(g string) bool { return slices.Contains(c.want, g) }); i >= 0 {
			var order []string
			for _, g := range got {
				if slices.Contains(c.want, g) {
					order = append(order, g)
				}
			}
			var wantOrder []string
			for _, w := range c.want {
				if slices.Contains(got, w) {
					wantOrder = append(wantOrder, w)
				}
			}
			if !slices.Equal(order, wantOrder) {
				t.Errorf("%s: reported %q, want them in the order %q", c.name, order, wantOrder)
			}
		}
	}
	t.Logf("%d cases, %d numbers expected: %d false alarms, %d misses", len(cases), expected, alarms, misses)
}

// TestCorpusDetection adds an invented number to every answer of the
// corpus, many times over, and measures how many are reported: the
// misses are coincidences with what the conversation holds (a number
// that rounds to it, or one step from two numbers shown). Invented
// numbers have 2 to 4 significant digits and the magnitude of one of the
// answer's own numbers.
func TestCorpusDetection(t *testing.T) {
	const perCase = 40
	rng := rand.New(rand.NewPCG(6, 6))
	var tried, reportedN int
	bySig := map[int][2]int{}
	for _, c := range readCases(t) {
		var mags []float64
		for _, it := range extract(c.answer) {
			if v := math.Abs(it.value); v > 0 {
				mags = append(mags, v)
			}
		}
		if len(mags) == 0 {
			mags = []float64{100}
		}
		for range perCase {
			sig := 2 + rng.IntN(3)
			mag := math.Floor(math.Log10(mags[rng.IntN(len(mags))])) + float64(rng.IntN(3)-1)
			digits := rng.IntN(9*int(math.Pow(10, float64(sig-1)))) + int(math.Pow(10, float64(sig-1)))
			if digits%10 == 0 {
				digits++ // no trailing zero: it would not be written
			}
			text := strconv.FormatFloat(float64(digits)*math.Pow(10, mag-float64(sig-1)), 'f', max(0, sig-1-int(mag)), 64)
			if v, _ := strconv.ParseFloat(text, 64); v <= maxExemptInteger && !strings.Contains(text, ".") || v >= minYear && v <= maxYear && !strings.Contains(text, ".") {
				continue
			}
			answer := strings.TrimRight(c.answer, "\n") + "\n\nAnother figure: " + text + ".\n"
			found := slices.ContainsFunc(Check(answer, c.src), func(u Unverified) bool { return u.Text == text })
			tried++
			s := bySig[sig]
			s[0]++
			if found {
				reportedN++
				s[1]++
			}
			bySig[sig] = s
		}
	}
	rate := float64(reportedN) / float64(tried)
	t.Logf("invented numbers reported: %d of %d (%.1f%%); by significant digits: 2: %v, 3: %v, 4: %v", reportedN, tried, 100*rate, bySig[2], bySig[3], bySig[4])
	if rate < minDetection {
		t.Errorf("reported %.1f%% of invented numbers, want at least %.0f%%", 100*rate, 100*minDetection)
	}
}

// minDetection is the share of invented numbers TestCorpusDetection
// wants reported.
const minDetection = 0.75
