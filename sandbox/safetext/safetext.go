// Package safetext neutralises text that comes out of a sandbox, or in
// from a user, before a terminal, a Slack post or a model shows it: program
// output, file names, anything a program chose.
//
// Text a program writes may hold terminal escape sequences (which move the
// cursor, retitle the window, or write to the clipboard), a BEL, or Unicode
// bidirectional overrides that make a line read differently from the bytes
// it holds. None of these reaches a reader: each is replaced by a visible
// stand-in, so what was sent is still plain to see and nothing is obeyed.
package safetext

import (
	"strings"
	"unicode/utf8"
)

// Text returns s safe to show as a block of text. Line feeds and tabs stay;
// a carriage return becomes a line feed (CR LF one line feed), so that no
// text can be written over other text. Every other C0 control and DEL
// becomes its Unicode control picture (ESC is shown as ␛, BEL as ␇), which
// leaves escape sequences inert and visible. C1 controls (U+0080–U+009F,
// among them the 8-bit CSI and OSC), bidirectional embeddings, overrides
// and isolates (U+202A–U+202E, U+2066–U+2069) and bytes that are not UTF-8
// become U+FFFD. Text that needs none of this is returned as it is.
func Text(s string) string { return clean(s, false) }

// Line is [Text] for text shown on one line, such as a file name: line
// feeds and tabs are shown as ␊ and ␉ too.
func Line(s string) string { return clean(s, true) }

// firstUnsafe returns the index of the first byte of s that must change,
// or -1.
func firstUnsafe(s string, line bool) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				if line || (c != '\n' && c != '\t') {
					return i
				}
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || Replaced(r) {
			return i
		}
		i += n
	}
	return -1
}

// Replaced reports whether [Text] and [Line] replace r, a valid rune
// outside ASCII, with U+FFFD: a C1 control or a bidi embedding, override
// or isolate.
func Replaced(r rune) bool {
	return r >= 0x80 && r <= 0x9f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

func clean(s string, line bool) string {
	i := firstUnsafe(s, line)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '\r' && !line:
				b.WriteByte('\n')
				if i+1 < len(s) && s[i+1] == '\n' {
					i++
				}
			case c == '\n' && !line, c == '\t' && !line, c >= 0x20 && c != 0x7f:
				b.WriteByte(c)
			case c == 0x7f:
				b.WriteRune('\u2421') // ␡
			default:
				b.WriteRune(0x2400 + rune(c)) // ␀ … ␟
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || Replaced(r) {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
