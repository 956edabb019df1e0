package numcheck

import (
	"slices"
	"testing"
)

// texts returns the texts of the numbers extract finds in s, but for
// the small integers, never reported.
func texts(s string) []string {
	var out []string
	for _, it := range extract(s) {
		if len(it.alts[0]) == 1 && it.alts[0][0].exempt {
			continue
		}
		out = append(out, it.text)
	}
	return out
}

func TestExtract(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		want     []string
	}{
		{"plain", "The mean is 51.55 and the max 4876.35.", []string{"51.55", "4876.35"}},
		{"thousands", "Total: 1,234,567 orders and 13,983,816 tickets", []string{"1,234,567", "13,983,816"}},
		{"narrow no-break spaces", "= 1\u202f136\u202f275", []string{"1\u202f136\u202f275"}},
		{"underscores", "n = 1_000_000 samples", []string{"1_000_000"}},
		{"currency and sign", "a loss of −$1,234.56 and -5.3% and +4.2% and £12.50", []string{"−$1,234.56", "-5.3%", "+4.2%", "£12.50"}},
		{"percent with a space", "19 % MwSt.", []string{"19 %"}},
		{"scale words", "$343k, 96.2k, $4.51M, 1.23 million, 2 bn, 3 trillion", []string{"$343k", "96.2k", "$4.51M", "1.23 million", "2 bn", "3 trillion"}},
		{"units are not scale words", "15km, 100ms, 64GB, 12x", []string{"15", "100", "64", "12"}},
		{"scientific", "1.2e-05, 1.2E+03, 1.2 × 10⁻⁵, 6.022×10²³, 2.18 x 10^14, 3 \\times 10^{-4}", []string{"1.2e-05", "1.2E+03", "1.2 × 10⁻⁵", "6.022×10²³", "2.18 x 10^14", "3 \\times 10^{-4}"}},
		{"fractions", "P = 671/1296, odds 3/4", []string{"671/1296", "3/4"}},
		{"ranges", "between 12–20% and 0.42-0.58", []string{"12", "20%", "0.42", "0.58"}},
		{"years", "from 2015 to 2023, in 1990s, but 2,024 units and $2024", []string{"2,024", "$2024"}},
		{"dates", "on 2024-03-15, 15/03/2024, 3/15/24, 15.03.2024, March 15, 15 March, 27 December 2023, Mar 3, 2024-03", nil},
		{"seasons", "the 2023-24 season, FY 2023/24 and 2019–20", nil},
		{"times", "at 12:30, 09:15:00, 18:45 UTC, 3:30 pm", nil},
		{"ordinals", "the 3rd, 25th and 21st percentiles", nil},
		{"versions", "Python 3.11, NumPy 1.24.2, version 2.5, v1.2, ISO 8601, Python 3.11.2", nil},
		{"identifiers", "Q3, x2, weight_kg2, COVID-19, GPT-4, H2O, file2.csv, np.float64, 0x1F, QUARTILE.EXC", nil},
		{"list markers", "1. first 51.3\n2) second\n  3. third\n- 4. bullet 17.5", []string{"51.3", "17.5"}},
		{"headings", "## 1. Quartiles\n### 3.2 Results 12.5\n# 2024 plan", []string{"12.5"}},
		{"footnotes", "interpolation[^1] and source [12], see [3]", nil},
		{"links", "see https://example.com/data/2023/report-42?n=50 and <https://x.io/12|the 13.5 docs> and [docs 14.5](https://a.b/15)", []string{"13.5", "14.5"}},
		{"slack mentions", "<@U123456> asked in <#C987654|general>", nil},
		{"fenced python is skipped", "x\n```python\nrng = default_rng(2025)\ns = normal(100, 15, 50_000)\n```\ny 12.5", []string{"12.5"}},
		{"fenced output is checked", "```\nmean   51.55\n```", []string{"51.55"}},
		{"inline code is checked", "I used `round(x, 3)` and `df.head(20)`", []string{"20"}},
		{"superscripts", "62⁸ and 13² and R² = 0.997", []string{"62", "13", "0.997"}},
		{"hash ids and exponents", "order #10001 and 1.07^15", []string{"1.07"}},
		{"german", "1.545,81 € und 246,81 € bei 1.299 €", []string{"1.545,81", "246,81", "1.299"}},
		{"comma lists", "C(10,8) and (4,2)", []string{"10,8", "4,2"}},
		{"ratios", "about 1:1, odds 2:3", nil},
		{"bold and italics", "**51.8%** and _0.52_ and *13.97*", []string{"51.8%", "0.52", "13.97"}},
		{"table", "| 23 | 50.7% |\n|---|---|\n| 30 | 70.6% |", []string{"23", "50.7%", "30", "70.6%"}},
		{"big integer", "25! = 15,511,210,043,330,985,984,000,000", []string{"25", "15,511,210,043,330,985,984,000,000"}},
		{"leading dot", "alpha = .05 and .011 and np.5", []string{".05", ".011"}},
		{"small integers", "3 runs, 10 people, 11 rows", []string{"11"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := texts(tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("extract(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestExtractValues(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want float64
	}{
		{"−2.5%", -2.5},
		{"$45k", 45000},
		{"1.2 × 10⁻⁵", 1.2e-5},
		{"1.23 million", 1.23e6},
		{"1,234.56", 1234.56},
		{"671/1296", 671.0 / 1296},
		{"1.545,81 €", 1545.81},
		{"2.18 x 10^14", 2.18e14},
	} {
		items := extract(tt.in)
		if len(items) != 1 {
			t.Errorf("extract(%q) found %d numbers, want 1", tt.in, len(items))
			continue
		}
		if got := items[0].value; got != tt.want && (got-tt.want)/tt.want > 1e-12 {
			t.Errorf("extract(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestExtractSmallIntegersExempt(t *testing.T) {
	items := extract("3 runs, 10 people, 11 rows, 5 million, 5%")
	want := map[string]bool{"3": true, "10": true, "11": false, "5 million": false, "5%": true}
	for _, it := range items {
		exempt := it.alts[0][0].exempt
		if w, ok := want[it.text]; !ok || exempt != w {
			t.Errorf("%q: exempt = %v, want %v (known: %v)", it.text, exempt, w, ok)
		}
	}
	if len(items) != len(want) {
		t.Errorf("found %d numbers, want %d", len(items), len(want))
	}
}

func TestLexSource(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []float64
	}{
		{"0.5155466019417476", []float64{0.5155466019417476}},
		{"[1.2345e-04 5.0000e-01]", []float64{1.2345e-4, 0.5}},
		{"1,234,567", []float64{1234567, 1, 234, 567, 234567}},
		{"1,234.5", []float64{1234.5, 1, 234.5}},
		{"671/1296", []float64{671.0 / 1296, 671, 1296}},
		{"2**30", []float64{1 << 30, 2, 30}},
		{"10_000", []float64{10000, 10, 0}},
		{"x = .5", []float64{0.5}},
		{"np.float64(-0.25)", []float64{64, 0.25}},
		{"$12k", []float64{12, 12000}},
		{"1e999 7", []float64{7}},
	} {
		var got []float64
		lexSource(tt.in, true, func(v, _ float64) bool {
			got = append(got, v)
			return true
		})
		slices.Sort(got)
		want := slices.Clone(tt.want)
		slices.Sort(want)
		if !slices.EqualFunc(got, want, func(a, b float64) bool { return a == b || (a-b)/b < 1e-12 && (b-a)/b < 1e-12 }) {
			t.Errorf("lexSource(%q) = %v, want %v", tt.in, got, want)
		}
	}
}
