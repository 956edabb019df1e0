package numcheck

import (
	"math"
	"unicode"
	"unicode/utf8"
)

// maxExponent bounds the decimal exponents the lexers accept; past it a
// number is not a number a person would check.
const maxExponent = 300

// pow10 returns 10**e.
func pow10(e int) float64 {
	if i := e + len(pow10tab)/2; uint(i) < uint(len(pow10tab)) {
		return pow10tab[i]
	}
	return math.Pow(10, float64(e))
}

// pow10tab[i] is 10**(i−maxExponent−20).
var pow10tab = func() (t [2*(maxExponent+20) + 1]float64) {
	for i := range t {
		t[i] = math.Pow(10, float64(i-len(t)/2))
	}
	return t
}()

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// digitsEnd returns the end of the run of ASCII digits starting at i.
func digitsEnd(s string, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

// digitsValue returns the value of a run of ASCII digits, keeping its
// first 19 significant digits exactly.
func digitsValue(d string) float64 { return decimalValue(d, 0) }

// decimalValue returns the value of a run of ASCII digits times 10**e,
// keeping its first 19 significant digits exactly; +Inf or 0 when it is
// out of range.
func decimalValue(d string, e int) float64 {
	var m uint64
	n := 0
	for i := 0; i < len(d); i++ {
		if n == 19 {
			e++
			continue
		}
		m = m*10 + uint64(d[i]-'0')
		if m > 0 {
			n++
		}
	}
	if m == 0 {
		return 0
	}
	if e > maxExponent || e < -2*maxExponent {
		if e > 0 {
			return math.Inf(1)
		}
		return 0
	}
	return float64(m) * pow10(e)
}

// groupSep returns the length of a thousands separator at s[i:] (0 when
// there is none): a comma, an underscore, or a no-break, narrow no-break
// or thin space.
func groupSep(s string, i int) int {
	if i >= len(s) {
		return 0
	}
	switch s[i] {
	case ',', '_':
		return 1
	case 0xC2: // U+00A0
		if i+1 < len(s) && s[i+1] == 0xA0 {
			return 2
		}
	case 0xE2: // U+2009, U+202F
		if i+2 < len(s) && ((s[i+1] == 0x80 && s[i+2] == 0x89) || (s[i+1] == 0x80 && s[i+2] == 0xAF)) {
			return 3
		}
	}
	return 0
}

// group3 reports whether s[i:] is exactly three digits not followed by
// another digit.
func group3(s string, i int) bool {
	return i+3 <= len(s) && isDigit(s[i]) && isDigit(s[i+1]) && isDigit(s[i+2]) && (i+3 == len(s) || !isDigit(s[i+3]))
}

// runeBefore returns the rune ending at s[i] (utf8.RuneError at 0).
func runeBefore(s string, i int) (rune, int) {
	if i <= 0 {
		return utf8.RuneError, 0
	}
	return utf8.DecodeLastRuneInString(s[:i])
}

func isLetter(r rune) bool {
	return r < utf8.RuneSelf && (r|0x20 >= 'a' && r|0x20 <= 'z') || r >= utf8.RuneSelf && unicode.IsLetter(r)
}

func isAlnum(r rune) bool { return isLetter(r) || r < utf8.RuneSelf && isDigit(byte(r)) }

// superscript returns the digit or sign a superscript rune stands for.
func superscript(r rune) (byte, bool) {
	switch r {
	case '⁰':
		return '0', true
	case '¹':
		return '1', true
	case '²':
		return '2', true
	case '³':
		return '3', true
	case '⁴', '⁵', '⁶', '⁷', '⁸', '⁹':
		return byte('4' + r - '⁴'), true
	case '⁻':
		return '-', true
	case '⁺':
		return '+', true
	}
	return 0, false
}

// lexSource calls f with the absolute value of every number in s, and
// the quantum it is written to (1 for an integer, 0.01 for 1.25), until
// f returns false. It reads numbers as programs print and people write
// them: 1234, 1,234,567 (and 1, 234 and 567), 1_000, 0.5155, .5,
// 1.2e-05, and also the value of an integer fraction (671/1296) and an
// integer power (2**30, 10^6). With parts false, a number with thousands
// separators is read as a whole only. It reports false when f stopped it.
func lexSource(s string, parts bool, f func(v, q float64) bool) bool {
	n := len(s)
	for i := 0; i < n; {
		for i < n && !numberByte[s[i]] {
			i++
		}
		if i == n {
			break
		}
		if s[i] == '.' && (i+1 >= n || !isDigit(s[i+1]) || i > 0 && isDigit(s[i-1])) {
			i++
			continue
		}
		// v = m * 10**e, m holding the first 18 or 19 significant
		// digits.
		var m uint64
		e := 0
		j := i
		for ; j < n && isDigit(s[j]); j++ {
			if m < 1e18 {
				m = m*10 + uint64(s[j]-'0')
			} else {
				e++
			}
		}
		intEnd := j
		if j+1 < n && s[j] == '.' {
			if j-i <= 3 && !german(s, i, intEnd, f) {
				return false
			}
			if isDigit(s[j+1]) {
				for j++; j < n && isDigit(s[j]); j++ {
					if m < 1e18 {
						m = m*10 + uint64(s[j]-'0')
						e--
					}
				}
			}
		}
		if j < n && (s[j] == 'e' || s[j] == 'E') {
			// Not in a word or hash: 20e10A is 20 and a word.
			if x, k, ok := exponent(s, j); ok && (k == n || s[k] < 'A' || !isLetterAt(s, k)) {
				e += x
				j = k
			}
		} else if timesNext(s, j) {
			// 1.2 × 10⁻⁵ (as an earlier answer or the question may
			// write it): its mantissa and 10 are read on as well.
			if x, _, ok := sciTimesTen(s, j); ok && e+x >= -maxExponent && e+x <= maxExponent {
				if !f(float64(m)*pow10(e+x), pow10(e+x)) {
					return false
				}
			}
		}
		if e >= -maxExponent && e <= maxExponent {
			q := pow10(e)
			v := float64(m) * q
			whole := true
			if j == intEnd && j > i && j < n && formByte[s[j]] {
				end, ok := integerForms(s, i, intEnd, v, f)
				if !ok {
					return false
				}
				if end > j && !parts {
					j, whole = end, false
				}
			}
			if whole && !f(v, q) {
				return false
			}
			if j < n && (s[j] == ' ' && j+1 < n && s[j+1] >= 'a' || s[j] >= 'A') {
				if x, l := scaleAt(s, j); l > 0 && !f(v*x, q*x) {
					return false
				}
			}
		}
		i = j
	}
	return true
}

// numberByte tells the bytes a number may start with.
var numberByte = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	t['.'] = true
	return t
}()

// formByte tells the bytes after an integer that may make it part of a
// larger form (see integerForms): separators, '/', '*', '^', and the
// lead bytes of no-break and narrow spaces.
var formByte = func() (t [256]bool) {
	for _, c := range []byte{',', '_', '/', '*', '^', 0xC2, 0xE2} {
		t[c] = true
	}
	return t
}()

// timesNext reports whether a multiplication sign may follow s[i:],
// after spaces: the cheap test before sciTimesTen.
func timesNext(s string, i int) bool {
	for i < len(s) && s[i] == ' ' {
		i++
	}
	if i >= len(s) {
		return false
	}
	switch s[i] {
	case 'x', 'X', '*', '\\', 0xC3, 0xC2, 0xE2: // ×, ·, ⋅ and narrow spaces
		return true
	}
	return false
}

// german calls f with the value of the German number (1.545,81,
// 1.234.567) whose integer part is s[start:end], if it is one, and
// reports false when f stopped it.
func german(s string, start, end int, f func(v, q float64) bool) bool {
	n := len(s)
	if !(end-start <= 3 && end < n && s[end] == '.' && group3(s, end+1) && end+4 < n && (s[end+4] == '.' || s[end+4] == ',')) {
		return true
	}
	k, w := end, digitsValue(s[start:end])
	for k < n && s[k] == '.' && group3(s, k+1) {
		w = w*1000 + digitsValue(s[k+1:k+4])
		k += 4
	}
	q := 1.0
	if k+1 < n && s[k] == ',' && isDigit(s[k+1]) {
		fe := digitsEnd(s, k+1)
		q = pow10(-(fe - k - 1))
		w += digitsValue(s[k+1:fe]) * q
	}
	return f(w, q)
}

// exponent reads an exponent "e-05", "E+03" at s[i:].
func exponent(s string, i int) (x, end int, ok bool) {
	if i >= len(s) || s[i] != 'e' && s[i] != 'E' {
		return 0, i, false
	}
	k := i + 1
	neg := false
	if k < len(s) && (s[k] == '+' || s[k] == '-') {
		neg = s[k] == '-'
		k++
	}
	if k >= len(s) || !isDigit(s[k]) {
		return 0, i, false
	}
	for ; k < len(s) && isDigit(s[k]); k++ {
		if x <= 10*maxExponent {
			x = x*10 + int(s[k]-'0')
		}
	}
	if neg {
		x = -x
	}
	return x, k, true
}

// integerForms calls f with what the integer s[start:end] (of value v)
// begins: 1,234,567.89 as a whole, 671/1296's value, 2**30's value. It
// returns the end of the grouped number (end when there is none), and
// false when f stopped it.
func integerForms(s string, start, end int, v float64, f func(v, q float64) bool) (int, bool) {
	n := len(s)
	groupEnd := end
	if end-start <= 3 {
		k, w, grouped := end, v, false
		for {
			l := groupSep(s, k)
			if l == 0 || !group3(s, k+l) {
				break
			}
			w = w*1000 + digitsValue(s[k+l:k+l+3])
			k += l + 3
			grouped = true
		}
		if grouped {
			q := 1.0
			groupEnd = k
			if k+1 < n && s[k] == '.' && isDigit(s[k+1]) {
				fe := digitsEnd(s, k+1)
				q = pow10(-(fe - k - 1))
				w += digitsValue(s[k+1:fe]) * q
				groupEnd = fe
			}
			if !f(w, q) {
				return groupEnd, false
			}
		}
	}
	if end+1 < n && s[end] == '/' && isDigit(s[end+1]) {
		if d := digitsValue(s[end+1 : digitsEnd(s, end+1)]); d > 0 {
			if !f(v/d, v/d*1e-12) {
				return groupEnd, false
			}
		}
	}
	if p, ok := power(s, end); ok && v > 1 {
		if w := math.Pow(v, float64(p)); w < 1e300 {
			if !f(w, 1) {
				return groupEnd, false
			}
		}
	}
	return groupEnd, true
}

// power reads an integer power "**30" or "^6" at s[i:].
func power(s string, i int) (int, bool) {
	switch {
	case i+2 < len(s) && s[i] == '*' && s[i+1] == '*':
		i += 2
	case i+1 < len(s) && s[i] == '^':
		i++
	default:
		return 0, false
	}
	j := digitsEnd(s, i)
	if j == i || j-i > 3 {
		return 0, false
	}
	return int(digitsValue(s[i:j])), true
}
