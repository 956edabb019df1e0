package numcheck

import (
	"slices"
	"strings"
	"testing"
)

// reported returns the texts Check reports.
func reported(answer string, src Sources) []string {
	var out []string
	for _, u := range Check(answer, src) {
		out = append(out, u.Text)
	}
	return out
}

func TestCheckMatches(t *testing.T) {
	for _, tt := range []struct {
		name, answer, output string
		found                bool
	}{
		{"exact", "It is 0.5155466019417476.", "0.5155466019417476", true},
		{"rounded half up", "about 0.516", "0.5155466019417476", true},
		{"rounded to two", "about 0.52", "0.5155466019417476", true},
		{"as a percentage", "51.55%", "0.5155466019417476", true},
		{"as a percentage rounded", "51.6%", "0.5155466019417476", true},
		{"truncated", "51.5%", "0.5155466019417476", true},
		{"fraction of a printed percentage", "0.5155", "share: 51.55%", true},
		{"more precise than the source", "0.5155", "share: 52%", false},
		{"wrong digit", "0.517", "0.5155466019417476", false},
		{"rounded the wrong way", "0.515", "0.5165", false},
		{"half up edge", "$1,071.96", "1071.955", true},
		{"half even edge", "48.88", "48.885", true},
		{"integer from a float", "1235 units", "1234.56", true},
		{"integer with trailing zeros", "about 1,200", "1234.56", true},
		{"integer too far", "1,100", "1234.56", false},
		{"thousands in source", "1610612736 bytes", "1,610,612,736", true},
		{"thousands in answer", "1,610,612,736 bytes", "1610612736.0", true},
		{"scientific in source", "1.2e-05", "1.2345e-05", true},
		{"scientific times ten", "1.1 × 10⁻²⁵", "1.086808926394358e-25", true},
		{"scientific caret", "2.18 × 10^14", "218340105584896", true},
		{"scale word", "1.23 million", "1234567", true},
		{"scale word wrong", "1.25 million", "1234567", false},
		{"scale suffix", "$343k", "342980.75", true},
		{"printed in thousands", "$343k", "343.0", true},
		{"trillion", "1.08 trillion", "1083206916845.7535", true},
		{"negative", "fell −2.49%", "-0.0249", true},
		{"sign ignored", "a drop of 2.49%", "-0.0249", true},
		{"fraction exact", "671/1296", "0.5177469135802469", true},
		{"fraction from sympy", "25/216", "25/216", true},
		{"fraction parts", "671/1296", "p = 671 of 1296", true},
		{"fraction unknown", "671/1297", "0.5177469135802469", false},
		{"code literal", "at 13.5 per unit", "", true}, // in the code below
		{"big integer", "15,511,210,043,330,985,984,000,000", "15511210043330985984000000", true},
		{"big integer wrong", "15,511,210,053,330,985,984,000,000", "15511210043330985984000000", false},
		{"past twelve digits", "15,511,210,043,330,985,985,000,000", "15511210043330985984000000", true},
		{"german", "1.545,81 €", "1545.81", true},
		{"german ambiguous dot", "1.299 € mal 1,19", "1299.0 1.19", true},
		{"numpy array", "9.999e-09", "[9.9990e-09 4.0498e-05]", true},
		{"pandas describe", "mean 1,429.09", "mean     1429.086458\nstd      1126.803220", true},
		{"traceback noise is a source too", "line 3802", "File \"base.py\", line 3802, in get_loc", true},
		{"invented", "the skewness is 0.31", "171.416 9.177767709755363", false},
		{"convention", "at the 5% level, 95% CI, p < 0.05", "", true},
		{"pi", "π ≈ 3.14159", "", true},
		{"power of ten", "out of 10,000 people", "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := Sources{Runs: []Run{{Code: "price = 13.5", Output: tt.output}}}
			got := Check(tt.answer, src)
			if tt.found && len(got) > 0 {
				t.Errorf("Check(%q) against %q reported %v, want nothing", tt.answer, tt.output, got)
			}
			if !tt.found && len(got) == 0 {
				t.Errorf("Check(%q) against %q reported nothing, want it reported", tt.answer, tt.output)
			}
		})
	}
}

func TestCheckSources(t *testing.T) {
	answer := "Found 123.45 and 678.9 and 2,468 and 9,753 and 31.4159."
	src := Sources{
		Question: "What about 123.45?",
		Runs:     []Run{{Code: "x = 678.9", Output: "2468"}},
		Files:    []string{"- /mnt/data/a.csv (1 KiB, CSV table)\n    a,b\n    9753,1"},
		Earlier:  []string{"Earlier answer: 31.4159"},
	}
	if got := reported(answer, src); got != nil {
		t.Errorf("reported %q, want nothing", got)
	}
	if got := reported(answer, Sources{}); !slices.Equal(got, []string{"123.45", "678.9", "2,468", "9,753", "31.4159"}) {
		t.Errorf("with no sources reported %q, want every number", got)
	}
}

func TestCheckDerived(t *testing.T) {
	for _, tt := range []struct {
		name, question, answer, output string
		want                           []string
	}{
		{"twice", "Solve 3x + 7 = 133", "x = 42, so twice that is 84.", "[42]", nil},
		{"difference", "", "North 1,913 and West 1,765: 148 more.", "1913 1765", nil},
		{"sum", "", "99 sick and 495 false positives: 594 positives.", "99.0 495.00000000000045", nil},
		{"ratio as a percentage", "", "$2,779.65 more than $18,450.75, about 15.1%.", "2779.65 18450.75", nil},
		{"percent of the question's numbers", "What's 15% of 80?", "15% of 80 is 12.", "", nil},
		{"square of a rounded number", "", "r = 0.73, r² ≈ 0.54", "0.7346041344897047", nil},
		{"off by one", "", "ages 18–34 and 35–49", "[18, 35) [35, 50)", []string{"49"}}, // 34 = 35 − 1; 50 is only in the run
		{"complement", "", "P = 0.5177, so none: 0.4823", "0.5177469135802469", nil},
		{"two steps", "", "Jan $18,450.75, Feb $21,230.40; March about $24,430.", "18450.75 21230.4", []string{"$24,430"}},
		{"no arithmetic on constants", "", "The average would be 12.5.", "", []string{"12.5"}},
		{"a rounding of another unfound number", "", "299,792,458 m/s, about 1.08 billion km/h (1,079,252,849 km/h)", "", []string{"299,792,458", "1.08 billion", "1,079,252,849"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := Sources{Question: tt.question, Runs: []Run{{Output: tt.output}}}
			if got := reported(tt.answer, src); !slices.Equal(got, tt.want) {
				t.Errorf("Check(%q) = %q, want %q", tt.answer, got, tt.want)
			}
		})
	}
}

func TestCheckOrderAndRepeats(t *testing.T) {
	got := reported("43.7, then 12.5%, then 43.7 again and 99.1", Sources{Runs: []Run{{Output: "99.1"}}})
	if want := []string{"43.7", "12.5%"}; !slices.Equal(got, want) {
		t.Errorf("reported %q, want %q", got, want)
	}
}

func TestCheckBudgets(t *testing.T) {
	// A result printed at the end of a long output is still found, and
	// one in its middle is not looked for.
	long := strings.Repeat("noise 1.5 ", MaxSourceBytes/5)
	src := Sources{Runs: []Run{{Output: long[:len(long)/2] + " 7777.77 " + long[len(long)/2:] + " 4242.42"}}}
	if got := reported("4242.42", src); got != nil {
		t.Errorf("the tail's number: reported %q", got)
	}
	if got := reported("7777.77", src); !slices.Equal(got, []string{"7777.77"}) {
		t.Errorf("the middle's number: reported %q, want it reported (past the budget)", got)
	}
	// The answer's numbers past MaxAnswerNumbers are not checked.
	var b strings.Builder
	for i := range MaxAnswerNumbers + 50 {
		b.WriteString("1" + strings.Repeat("3", 1+i%5) + ".7 ")
	}
	if got := Check(b.String(), Sources{}); len(got) > MaxAnswerNumbers {
		t.Errorf("reported %d numbers, want at most %d", len(got), MaxAnswerNumbers)
	}
}

func TestWarning(t *testing.T) {
	for _, tt := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"43.7"}, "not found in any run's output: 43.7"},
		{[]string{"43.7", "12%"}, "not found in any run's output: 43.7, 12%"},
		{strings.Fields("11 12 13 14 15 16 17 18 19 20 21 22"), "not found in any run's output: 11, 12, 13, 14, 15, 16, 17, 18, 19, 20 and 2 more"},
	} {
		var nums []Unverified
		for _, s := range tt.in {
			nums = append(nums, Unverified{Text: s})
		}
		if got := Warning(nums); got != tt.want {
			t.Errorf("Warning(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
