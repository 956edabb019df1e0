package numcheck

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// An atom is one number that must be found for an item to be verified.
type atom struct {
	v float64 // absolute value
	// q is the precision the number is written to, as a target: the
	// source must round or truncate to v at q. An integer's trailing
	// zeros may be rounding: 1,200 is written to the hundred.
	q float64
	// oq is the width of the interval the number stands for as an
	// operand of a derivation: 0 for an integer (taken as exact), q for
	// a decimal (0.73 stands for 0.725 to 0.735).
	oq float64
	// dq is the precision a derived number must match: as written, with
	// no rounding read into trailing zeros.
	dq       float64
	pct      bool // written as a percentage
	exempt   bool // a small integer, never reported
	verified bool
}

// An item is a number of the answer with the readings it may have: it is
// verified when every atom of one of its readings (alts) is found.
type item struct {
	text  string
	value float64
	alts  [][]atom
	// parts tells that alts[1] holds the parts of a fraction (671 and
	// 1296 of 671/1296): numbers the answer shows, unlike the other
	// readings of an ambiguous number.
	parts bool
	// label is what names the number on its line (see [Figure]).
	label string
}

// Small integers are counting words ("3 runs", "the 4 regions"): never
// reported.
const maxExemptInteger = 10

// Years written alone are not checked.
const (
	minYear = 1900
	maxYear = 2100
)

// extract returns the numbers of a Markdown answer worth checking.
func extract(s string) []item {
	x := extractor{german: strings.Contains(s, "€") || germanNumber(s)}
	fence := ""
	skipFence := false
	for len(s) > 0 && len(x.items) < MaxAnswerNumbers {
		line := s
		if k := strings.IndexByte(s, '\n'); k >= 0 {
			line, s = s[:k], s[k+1:]
		} else {
			s = ""
		}
		trim := strings.TrimLeft(line, " \t")
		if fence != "" {
			if strings.HasPrefix(trim, fence) && strings.TrimSpace(strings.TrimLeft(trim, fence[:1])) == "" {
				fence = ""
				continue
			}
			if skipFence {
				continue
			}
		} else if f := fenceOpen(trim); f != "" && !strings.Contains(trim[len(f):], f) {
			fence = f
			skipFence = codeInfo(trim[len(f):])
			continue
		}
		x.line(line)
	}
	return x.items
}

// fenceOpen returns the fence ("```" or "~~~"...) a line opens, or "".
func fenceOpen(l string) string {
	for _, c := range []string{"`", "~"} {
		n := len(l) - len(strings.TrimLeft(l, c))
		if n >= 3 {
			return l[:n]
		}
	}
	return ""
}

// codeInfo reports whether a fence's info string names a programming
// language: such a block is code the answer suggests, not a result.
func codeInfo(info string) bool {
	w := strings.ToLower(strings.TrimSpace(info))
	if k := strings.IndexAny(w, " \t{"); k >= 0 {
		w = w[:k]
	}
	switch w {
	case "", "text", "txt", "plain", "plaintext", "output", "out", "console", "csv", "tsv", "table", "markdown", "md", "result", "results":
		return false
	}
	return true
}

// germanNumber reports whether s holds a number written the German way,
// 1.545,81: then 1.299 may be 1299.
func germanNumber(s string) bool {
	for i := strings.IndexByte(s, ','); i >= 0; {
		j := i - 1
		for j >= 0 && isDigit(s[j]) {
			j--
		}
		if i-j == 4 && j >= 1 && s[j] == '.' && isDigit(s[j-1]) && i+1 < len(s) && isDigit(s[i+1]) {
			return true
		}
		k := strings.IndexByte(s[i+1:], ',')
		if k < 0 {
			break
		}
		i += 1 + k
	}
	return false
}

type extractor struct {
	items  []item
	german bool
}

// line extracts the numbers of one line of prose.
func (x *extractor) line(l string) {
	heading := strings.HasPrefix(strings.TrimLeft(l, " \t"), "#")
	first := true // the next number is the first thing on the line
	for i := 0; i < len(l) && len(x.items) < MaxAnswerNumbers; {
		c := l[i]
		switch {
		case isDigit(c):
			i = x.number(l, i, first, heading)
			first = false
			continue
		case c == '<' && i+1 < len(l) && strings.IndexByte("@#!", l[i+1]) >= 0:
			// Slack mentions and channels: <@U123>, <#C123|general>.
			i = skipTo(l, i, ">")
			continue
		case c == '<' && hasURLPrefix(l[i+1:]):
			// <https://...|label>: the label is prose.
			i = skipTo(l, i, "|>")
			continue
		case c == ']' && i+1 < len(l) && l[i+1] == '(':
			i = skipTo(l, i, ")")
			continue
		case hasURLPrefix(l[i:]) && (i == 0 || !isAlnumByte(l[i-1])):
			i = skipTo(l, i, " \t>|)]")
			continue
		case c == '#' || c == '^':
			// #10001, [^1], x^2: ids, footnotes and exponents.
			j := i + 1
			for j < len(l) && (l[j] == '{' || l[j] == '(' || l[j] == '-' || l[j] == '+') {
				j++
			}
			if j < len(l) && isDigit(l[j]) {
				i = digitsEnd(l, j)
				first = false
				continue
			}
		case c == '[' && i+1 < len(l) && isDigit(l[i+1]):
			// [1]: a footnote or citation.
			if j := digitsEnd(l, i+1); j < len(l) && l[j] == ']' {
				i = j + 1
				first = false
				continue
			}
		}
		r, size := utf8.DecodeRuneInString(l[i:])
		if isLetter(r) {
			// A word or identifier with its digits: Q3, weight_kg,
			// COVID-19, file2.csv, QUARTILE.EXC.
			i = identEnd(l, i)
			first = false
			continue
		}
		if r != ' ' && r != '\t' && r != '>' && r != '|' && r != '*' && r != '-' && r != '+' && r != '_' && r != '#' {
			first = false
		}
		i += size
	}
}

func isAlnumByte(c byte) bool { return isDigit(c) || c|0x20 >= 'a' && c|0x20 <= 'z' }

func hasURLPrefix(s string) bool {
	for _, p := range []string{"http://", "https://", "www.", "ftp://", "mailto:"} {
		if len(s) >= len(p) && strings.EqualFold(s[:len(p)], p) {
			return true
		}
	}
	return false
}

// skipTo returns the index of the first of stops after s[i], or len(s).
func skipTo(s string, i int, stops string) int {
	if k := strings.IndexAny(s[i+1:], stops); k >= 0 {
		return i + 1 + k
	}
	return len(s)
}

// identEnd returns the end of the identifier starting at s[i].
func identEnd(s string, i int) int {
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case isAlnum(r) || r == '_':
			i += size
		case (r == '-' || r == '.') && i+1 < len(s):
			r2, _ := utf8.DecodeRuneInString(s[i+1:])
			if !isAlnum(r2) {
				return i
			}
			i += size
		default:
			return i
		}
	}
	return i
}

// number reads the number starting at the digit l[i], adds it as an item
// unless it is to be skipped, and returns where to go on.
func (x *extractor) number(l string, i int, first, heading bool) int {
	n := len(l)
	j := digitsEnd(l, i)
	mant := l[i:j]
	prev, _ := runeBefore(l, i)
	if prev == '_' || prev == '.' || prev == '-' {
		// x_1, np.float64, GPT-4 (words are skipped whole; this is
		// what a stray separator leaves).
		if p2, _ := runeBefore(l, i-1); isAlnum(p2) && (prev != '-' || isLetter(p2)) {
			return identEnd(l, i)
		}
	}
	// .5: a decimal without its 0 (not the period of "np.5" or "1.5").
	leadingDot := false
	if prev == '.' {
		if p2, _ := runeBefore(l, i-1); !isAlnum(p2) {
			leadingDot = true
		}
	}
	if mant == "0" && j+1 < n && (l[j] == 'x' || l[j] == 'X') && isHexDigit(l[j+1]) {
		return identEnd(l, i)
	}
	if end, ok := dateOrTime(l, i, j); ok {
		return end
	}

	var (
		frac    string  // digits after the decimal point
		grouped bool    // thousands separators
		dec     int     // kind of decimal mark: 0 point or none, 1 ambiguous comma, 2 ambiguous German dot
		exp     int     // power of ten of scientific notation
		hasExp  bool    // scientific notation
		scale   = 1.0   // a scale word's factor
		den     string  // an integer fraction's denominator
		decEnd  = j     // end of the number proper
		alt     float64 // the other reading of an ambiguous mark
	)
	switch {
	case leadingDot:
		mant, frac = "0", mant
	case len(mant) <= 3 && mant[0] != '0' && groupSep(l, j) > 0 && group3(l, j+groupSep(l, j)):
		// 1,234,567 or 1 234 567 or 1_000.
		sep := l[j : j+groupSep(l, j)]
		k := j
		for strings.HasPrefix(l[k:], sep) && group3(l, k+len(sep)) {
			mant += l[k+len(sep) : k+len(sep)+3]
			k += len(sep) + 3
		}
		grouped, decEnd = true, k
		if k+1 < n && l[k] == '.' && isDigit(l[k+1]) && sep != "." {
			e := digitsEnd(l, k+1)
			frac, decEnd = l[k+1:e], e
		}
	case len(mant) <= 3 && mant[0] != '0' && j < n && l[j] == '.' && group3(l, j+1) && (strings.HasPrefix(l[j+4:], ".") && group3(l, j+5) || strings.HasPrefix(l[j+4:], ",") && j+5 < n && isDigit(l[j+5])):
		// German: 1.545,81 or 1.234.567.
		k := j
		for k < n && l[k] == '.' && group3(l, k+1) {
			mant += l[k+1 : k+4]
			k += 4
		}
		grouped, decEnd = true, k
		if k+1 < n && l[k] == ',' && isDigit(l[k+1]) {
			e := digitsEnd(l, k+1)
			frac, decEnd = l[k+1:e], e
		}
	case j+1 < n && l[j] == '.' && isDigit(l[j+1]):
		e := digitsEnd(l, j+1)
		if e+1 < n && l[e] == '.' && isDigit(l[e+1]) {
			// A version or section number: 1.24.2, 3.11.2.
			for e+1 < n && l[e] == '.' && isDigit(l[e+1]) {
				e = digitsEnd(l, e+1)
			}
			return e
		}
		frac, decEnd = l[j+1:e], e
		if x.german && e-j-1 == 3 && mant[0] != '0' && len(mant) <= 3 && (e == n || l[e] != ',') {
			dec, alt = 2, digitsValue(mant+frac)
		}
	case j+1 < n && l[j] == ',' && isDigit(l[j+1]) && !(mant[0] != '0' && group3(l, j+1)):
		// 246,81 or 1,19 or 0,516: a decimal comma, or two numbers;
		// 1,2e5 is two.
		e := digitsEnd(l, j+1)
		if _, _, ok := exponent(l, e); !ok {
			frac, decEnd, dec = l[j+1:e], e, 1
		}
	}
	k := decEnd
	if grouped {
		// No mantissa has thousands separators.
	} else if e, end, ok := exponent(l, k); ok && (end == n || !isLetterAt(l, end)) {
		exp, hasExp, k = e, true, end
	} else if e, end, ok := sciTimesTen(l, k); ok {
		exp, hasExp, k = e, true, end
	}
	if !hasExp && frac == "" && !grouped && k+1 < n && l[k] == '/' && isDigit(l[k+1]) {
		e := digitsEnd(l, k+1)
		den, k = l[k+1:e], e
	}
	// Superscripts left: 62⁸, 13², m²; the number stands as written.
	numEnd := k
	for k < n {
		r, size := utf8.DecodeRuneInString(l[k:])
		if _, ok := superscript(r); !ok {
			break
		}
		k += size
	}
	percent := false
	end := k
	if k > numEnd {
		end = numEnd
	} else if p := percentAt(l, k); p > 0 {
		percent, end = true, k+p
	} else if f, p := scaleAt(l, k); p > 0 {
		scale, end = f, k+p
	} else if k < n && isLetterAt(l, k) {
		w := identEnd(l, k)
		switch strings.ToLower(l[k:w]) {
		case "st", "nd", "rd", "th", "s":
			return w // 3rd, 25th, 1990s
		}
		end = k // a unit: 5km, 100ms, 10x
		k = w
	}
	if end > k {
		k = end
	}

	// Where the text starts: a sign and a currency symbol.
	start := i
	if leadingDot {
		start--
	}
	neg := false
	if r, size := runeBefore(l, start); r == '-' || r == '−' || r == '+' {
		if r2, _ := runeBefore(l, start-size); !isAlnum(r2) {
			neg = r != '+'
			start -= size
		}
	}
	currency := false
	if r, size := runeBefore(l, start); strings.ContainsRune("$€£¥₹", r) {
		currency = true
		start -= size
		if r, size := runeBefore(l, start); !neg && (r == '-' || r == '−') {
			if r2, _ := runeBefore(l, start-size); !isAlnum(r2) {
				neg = true
				start -= size
			}
		}
	}

	isInt := frac == "" && !hasExp
	if first && heading && !grouped && !currency {
		return k // ## 3 Results, ### 3.2 Methods
	}
	if isInt && scale == 1 && den == "" && !percent && !currency && !grouped {
		v := digitsValue(mant)
		switch {
		case v >= minYear && v <= maxYear && len(mant) == 4:
			return k // a year
		case v <= 31 && nextToMonth(l, i, decEnd):
			return k // March 15, 15 March
		case first && listMarker(l, decEnd):
			return k // 1. or 2) starting a line
		}
	}
	if isVersionWord(wordBefore(l, start)) {
		return k
	}

	// The readings.
	digits := mant + frac
	d := len(frac)
	unit := pow10(exp - d)
	v := decimalValue(digits, exp-d)
	if math.IsInf(v, 0) || v == 0 && strings.Trim(digits, "0") != "" || exp > maxExponent || exp < -maxExponent {
		return k // past what a float holds: not a figure to check
	}
	it := item{text: strings.TrimRight(l[start:end], " \u00a0"), label: labelBefore(l[:start])}
	switch {
	case den != "":
		a, b := digitsValue(mant), digitsValue(den)
		if b == 0 {
			return k
		}
		v = a / b
		it.alts = [][]atom{{{v: v, q: 0, dq: 0, pct: percent}}, {intAtom(mant), intAtom(den)}}
		it.parts = true
	case dec == 1:
		// German 246,81, or two numbers: C(10,8), (4,2).
		comma := []atom{{v: v, q: unit, oq: unit, dq: unit, pct: percent}}
		two := []atom{intAtom(mant), intAtom(frac)}
		it.alts = [][]atom{two, comma}
		if x.german {
			it.alts = [][]atom{comma, two}
		}
	default:
		a := atom{v: v * scale, q: unit * scale, oq: unit * scale, dq: unit * scale, pct: percent}
		if isInt {
			a.q = pow10(exp+roundedZeros(mant)) * scale
			a.oq = 0
			a.exempt = scale == 1 && v <= maxExemptInteger
		}
		it.alts = [][]atom{{a}}
		if scale != 1 {
			it.alts = append(it.alts, []atom{{v: v, q: a.q / scale, oq: a.oq / scale, dq: a.dq / scale, pct: percent}})
		}
		if dec == 2 {
			it.alts = append(it.alts, []atom{{v: alt, q: 1, dq: 1}})
		}
		v *= scale
	}
	for _, alt := range it.alts {
		for _, a := range alt {
			if math.IsInf(a.v, 0) {
				return k // a part past what a float holds
			}
		}
	}
	if den == "" {
		// The value as written, to the nearest float (no 24.900000000000002).
		if w, err := strconv.ParseFloat(mant+"."+frac+"e"+strconv.Itoa(exp+int(math.Round(math.Log10(scale)))), 64); err == nil {
			v = w
		}
	}
	if neg {
		v = -v
	}
	it.value = v
	x.items = append(x.items, it)
	return k
}

// intAtom is an integer written in digits, as a part of a reading.
func intAtom(digits string) atom {
	v := digitsValue(digits)
	return atom{v: v, q: pow10(roundedZeros(digits)), dq: 1, exempt: v <= maxExemptInteger}
}

// roundedZeros returns how many of an integer's trailing zeros may be
// rounding: all but those needed to keep two significant digits
// (1,200 and 1,000 to the hundred, 240 to the ten, 50 exactly).
func roundedZeros(digits string) int {
	digits = strings.TrimLeft(digits, "0")
	tz := len(digits) - len(strings.TrimRight(digits, "0"))
	return max(0, min(tz, len(digits)-2))
}

func isHexDigit(c byte) bool { return isDigit(c) || c|0x20 >= 'a' && c|0x20 <= 'f' }

func isLetterAt(s string, i int) bool {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return isLetter(r)
}

// sciTimesTen reads "× 10^-5", "x10⁻⁵", "* 10**5", "\times 10^{-5}" at
// s[i:], returning the exponent.
func sciTimesTen(s string, i int) (int, int, bool) {
	k := skipSpaces(s, i)
	switch {
	case strings.HasPrefix(s[k:], "×"), strings.HasPrefix(s[k:], "·"), strings.HasPrefix(s[k:], "⋅"):
		_, size := utf8.DecodeRuneInString(s[k:])
		k += size
	case strings.HasPrefix(s[k:], `\times`):
		k += len(`\times`)
	case strings.HasPrefix(s[k:], `\cdot`):
		k += len(`\cdot`)
	case k < len(s) && (s[k] == 'x' || s[k] == 'X' || s[k] == '*'):
		k++
	default:
		return 0, i, false
	}
	k = skipSpaces(s, k)
	if !strings.HasPrefix(s[k:], "10") {
		return 0, i, false
	}
	k += 2
	switch {
	case strings.HasPrefix(s[k:], "^"), strings.HasPrefix(s[k:], "**"):
		if s[k] == '*' {
			k++
		}
		k++
		closing := byte(0)
		if k < len(s) && (s[k] == '{' || s[k] == '(') {
			closing = map[byte]byte{'{': '}', '(': ')'}[s[k]]
			k++
		}
		neg := false
		if k < len(s) && (s[k] == '-' || s[k] == '+') {
			neg = s[k] == '-'
			k++
		} else if strings.HasPrefix(s[k:], "−") {
			neg = true
			k += len("−")
		}
		e := digitsEnd(s, k)
		if e == k || e-k > 3 {
			return 0, i, false
		}
		x := int(digitsValue(s[k:e]))
		if neg {
			x = -x
		}
		if closing != 0 && e < len(s) && s[e] == closing {
			e++
		}
		return x, e, true
	default:
		x, neg, digits := 0, false, 0
		for k < len(s) {
			r, size := utf8.DecodeRuneInString(s[k:])
			c, ok := superscript(r)
			if !ok || (c == '-' || c == '+') && digits > 0 {
				break
			}
			switch c {
			case '-':
				neg = true
			case '+':
			default:
				x = x*10 + int(c-'0')
				digits++
			}
			k += size
		}
		if digits == 0 || digits > 3 {
			return 0, i, false
		}
		if neg {
			x = -x
		}
		return x, k, true
	}
}

func skipSpaces(s string, i int) int {
	for i < len(s) {
		switch {
		case s[i] == ' ':
			i++
		case strings.HasPrefix(s[i:], "\u00a0"), strings.HasPrefix(s[i:], "\u202f"), strings.HasPrefix(s[i:], "\u2009"):
			i += 2 + btoi(s[i] == 0xE2)
		default:
			return i
		}
	}
	return i
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// percentAt returns the length of a percent sign at s[i:], after at most
// one space, or 0.
func percentAt(s string, i int) int {
	k := i
	if k < len(s) && s[k] == ' ' {
		k++
	} else if strings.HasPrefix(s[k:], "\u00a0") || strings.HasPrefix(s[k:], "\u202f") {
		k += 2 + btoi(s[k] == 0xE2)
	}
	switch {
	case strings.HasPrefix(s[k:], "%"):
		return k + 1 - i
	case strings.HasPrefix(s[k:], "‰"):
		return k + len("‰") - i
	}
	return 0
}

// scaleAt returns the factor and length of a scale word at s[i:]: 3.2k,
// $4.5M, 2bn, 1.23 million.
func scaleAt(s string, i int) (float64, int) {
	k := i
	spaced := false
	if k < len(s) && s[k] == ' ' {
		k, spaced = k+1, true
	}
	w := k
	for w < len(s) && (s[w]|0x20 >= 'a' && s[w]|0x20 <= 'z') {
		w++
	}
	if w == k || w < len(s) && isLetterAt(s, w) {
		return 0, 0
	}
	word := s[k:w]
	if !spaced {
		switch word {
		case "k", "K":
			return 1e3, w - i
		case "M", "mn":
			return 1e6, w - i
		case "B", "bn", "b":
			return 1e9, w - i
		}
	}
	switch strings.ToLower(word) {
	case "thousand":
		return 1e3, w - i
	case "million", "millions", "mn":
		return 1e6, w - i
	case "billion", "billions", "bn":
		return 1e9, w - i
	case "trillion", "trillions":
		return 1e12, w - i
	}
	return 0, 0
}

// dateOrTime reports whether the digits at s[i:j] start a date (2024-03-15,
// 15/03/2024, 15.03.2024) or a clock time (12:30, 09:15:00), and where it
// ends.
func dateOrTime(s string, i, j int) (int, bool) {
	n := len(s)
	if y := digitsValue(s[i:j]); j-i == 4 && y >= minYear && y <= maxYear {
		// A season or fiscal year: 2023-24, 2023/24, 2023–24.
		k := j
		if strings.HasPrefix(s[k:], "–") {
			k += len("–")
		} else if k < n && (s[k] == '-' || s[k] == '/') {
			k++
		}
		if k > j && k+2 <= n && digitsEnd(s, k) == k+2 && digitsValue(s[k:k+2]) == float64((int(y)+1)%100) {
			return k + 2, true
		}
	}
	if j-i == 4 && j+2 < n && (s[j] == '-' || s[j] == '/') {
		// 2024-03-15, 2024-03, 2024/03/15
		sep := s[j]
		k := digitsEnd(s, j+1)
		if k-j-1 >= 1 && k-j-1 <= 2 && digitsValue(s[j+1:k]) <= 12 && (k == n || !isDigit(s[k])) {
			if k+1 < n && s[k] == sep && isDigit(s[k+1]) {
				if e := digitsEnd(s, k+1); e-k-1 <= 2 {
					k = e
					if k < n && s[k] == 'T' && k+1 < n && isDigit(s[k+1]) {
						k = clockEnd(s, k+1)
					}
					return k, true
				}
			} else if k-j-1 == 2 && (k == n || s[k] != sep) {
				return k, true
			}
		}
	}
	if j-i <= 2 && j+1 < n && (s[j] == '/' || s[j] == '.' || s[j] == '-') {
		// 15/03/2024, 3/15/24, 15.03.2024
		sep := s[j]
		k := digitsEnd(s, j+1)
		if k-j-1 >= 1 && k-j-1 <= 2 && k+1 < n && s[k] == sep {
			e := digitsEnd(s, k+1)
			if (e-k-1 == 2 || e-k-1 == 4) && (e == n || !isDigit(s[e]) && !(s[e] == '.' && e+1 < n && isDigit(s[e+1]))) {
				return e, true
			}
		}
	}
	if j-i <= 2 && j+2 < n && s[j] == ':' && isDigit(s[j+1]) && isDigit(s[j+2]) && (j+3 == n || !isDigit(s[j+3])) {
		return clockEnd(s, i), true
	}
	return 0, false
}

// clockEnd returns the end of the clock time at s[i:]: 12:30, 12:30:45.5,
// 3:30 pm.
func clockEnd(s string, i int) int {
	k := digitsEnd(s, i)
	for k+2 < len(s) && s[k] == ':' && isDigit(s[k+1]) {
		k = digitsEnd(s, k+1)
	}
	if k+1 < len(s) && s[k] == '.' && isDigit(s[k+1]) {
		k = digitsEnd(s, k+1)
	}
	if k < len(s) && s[k] == 'Z' {
		k++
	}
	rest := strings.ToLower(s[k:])
	for _, p := range []string{" am", " pm", "am", "pm", " a.m.", " p.m."} {
		if strings.HasPrefix(rest, p) {
			return k + len(p)
		}
	}
	return k
}

var months = func() map[string]bool {
	m := make(map[string]bool)
	for _, name := range []string{"january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"} {
		m[name] = true
		m[name[:3]] = true
	}
	m["sept"] = true
	return m
}()

// nextToMonth reports whether the number at s[i:end] follows or precedes
// a month's name: March 15, 15 March, 15 of March.
func nextToMonth(s string, i, end int) bool {
	if months[strings.ToLower(wordBefore(s, i))] {
		return true
	}
	k := skipSpaces(s, end)
	if strings.HasPrefix(s[k:], "of ") {
		k += 3
	}
	w := k
	for w < len(s) && s[w]|0x20 >= 'a' && s[w]|0x20 <= 'z' {
		w++
	}
	return w > k && months[strings.ToLower(strings.TrimSuffix(s[k:w], "."))]
}

// wordBefore returns the word before s[i], skipping spaces, a period and
// a comma: "Python" in "Python 3.11", "March" in "March 15".
func wordBefore(s string, i int) string {
	k := i
	for k > 0 && (s[k-1] == ' ' || s[k-1] == '.' || s[k-1] == ',') {
		k--
	}
	w := k
	for w > 0 && (s[w-1]|0x20 >= 'a' && s[w-1]|0x20 <= 'z') {
		w--
	}
	return s[w:k]
}

var versionWords = map[string]bool{
	"python": true, "numpy": true, "pandas": true, "scipy": true, "sympy": true, "matplotlib": true,
	"statsmodels": true, "sklearn": true, "version": true, "release": true, "v": true, "go": true,
	"node": true, "java": true, "excel": true, "ubuntu": true, "debian": true, "windows": true,
	"macos": true, "ios": true, "android": true, "postgresql": true, "postgres": true, "mysql": true,
	"sqlite": true, "gpt": true, "claude": true, "llama": true, "unicode": true, "utf": true,
	"iso": true, "ieee": true, "rfc": true, "http": true, "html": true, "es": true, "ecmascript": true,
	"pep": true, "cpython": true, "pypy": true, "office": true, "iphone": true, "chrome": true,
}

// isVersionWord reports whether a number after word names a version or a
// standard: Python 3.11, ISO 8601.
func isVersionWord(word string) bool { return versionWords[strings.ToLower(word)] }

// listMarker reports whether the number ending at s[end] is followed by
// "." or ")" and a space: a list item's number.
func listMarker(s string, end int) bool {
	if end < len(s) && (s[end] == '.' || s[end] == ')') {
		return end+1 == len(s) || s[end+1] == ' ' || s[end+1] == '\t' || s[end+1] == '*'
	}
	return false
}

// maxLabelWords bounds a figure's label: the words nearest the number.
const maxLabelWords = 6

// labelBefore returns the words that name a number from the text before
// it on its line: the last table cell, list item or clause before it,
// without Markdown emphasis, a trailing colon or equals sign, or a
// currency sign. "| North | $1,234 |" names it "North"; "- **Revenue
// (EU)**: €3.2m" "Revenue (EU)"; "Sign-ups grew to 1,234" "Sign-ups grew
// to".
func labelBefore(s string) string {
	s = strings.NewReplacer("**", "", "__", "", "`", "", "*", "").Replace(s)
	s = strings.TrimRight(s, " \t\u00a0$€£¥+-−~≈(")
	if k := strings.LastIndexByte(s, '|'); k >= 0 {
		if strings.TrimSpace(s[k+1:]) == "" {
			// The number starts a cell: the cell before it names it.
			s = strings.TrimRight(s[:k], " \t")
			if j := strings.LastIndexByte(s, '|'); j >= 0 {
				s = s[j+1:]
			}
		} else {
			s = s[k+1:]
		}
	}
	for _, stop := range []string{". ", "; ", ", "} {
		if k := strings.LastIndex(s, stop); k >= 0 {
			s = s[k+len(stop):]
		}
	}
	s = strings.TrimSpace(s)
	s = strings.TrimLeft(s, "-+>#0123456789. \t")
	s = strings.TrimRight(s, " \t:=")
	if w := strings.Fields(s); len(w) > maxLabelWords {
		s = strings.Join(w[len(w)-maxLabelWords:], " ")
	}
	return s
}
