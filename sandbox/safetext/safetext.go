// Package safetext neutralises text that comes out of a sandbox, or in
// from a user or a model, before a terminal, a Slack post or a model shows
// it: program output, file names, answers, anything a program chose.
//
// Text a program writes may hold terminal escape sequences (which move the
// cursor, retitle the window, or write to the clipboard), a BEL, Unicode
// bidirectional controls that make a line read differently from the bytes
// it holds, or invisible characters that a reader does not see but a model
// reads (a whole hidden message can be written in Unicode tag characters).
// None of these reaches a reader as it was sent. What becomes of each,
// by class:
//
//   - Line feed and tab stay (on one line, [Line], they are shown as ␊
//     and ␉); a carriage return becomes a line feed (CR LF one line feed),
//     so that no text can be written over other text.
//   - Other C0 controls and DEL: their Unicode control pictures (␛, ␇,
//     ␡), which leaves escape sequences inert and visible.
//   - C1 controls (U+0080–U+009F, among them the 8-bit CSI and OSC),
//     bidirectional embeddings, overrides and isolates (U+202A–U+202E,
//     U+2066–U+2069) and bytes that are not UTF-8: U+FFFD, so a reader
//     sees that something was there and where. (A bidi override reorders
//     what follows it; the stand-in is inert and every surface, the
//     terminal's included, shows it.)
//   - Invisible characters, removed: zero-width space, word joiner,
//     zero-width no-break space (BOM), soft hyphen, the direction marks
//     (LRM, RLM, ALM), the invisible operators (U+2061–U+2064), the
//     deprecated format characters (U+206A–U+206F), interlinear annotation
//     marks, the combining grapheme joiner, Hangul and Khmer fillers, the
//     Mongolian vowel separator, musical formatting characters, and
//     variation selectors 17–256 (U+E0100–U+E01EF), which "smuggle" bytes
//     after an emoji.
//   - Tag characters (U+E0000–U+E007F), removed, except in the three
//     subdivision flags Unicode recommends (England, Scotland, Wales: a
//     black flag, the tags "gbeng", "gbsct" or "gbwls" and a cancel tag),
//     which stay whole.
//   - Zero-width joiner and non-joiner, kept only where they join: a joiner
//     between two emoji (👨‍👩‍👧, 🏳️‍🌈), either between two letters or
//     marks of scripts past Latin, Greek and Cyrillic (Arabic, Persian,
//     the Indic scripts, where they choose a letter's form). Elsewhere
//     they are removed.
//   - Variation selectors 1–16 (U+FE00–U+FE0F), kept once after a visible
//     character (❤️, keycaps such as 1️⃣); a selector after another, or
//     after nothing, chooses nothing and is removed.
//
// Everything else passes: letters of every script, emoji (flags made of
// regional indicators included), spaces of every width, combining marks.
// Text needing none of this is returned as it is. [Text] is idempotent.
// [Stream] does the same to text that comes in pieces.
package safetext

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text returns s safe to show as a block of text (see the package doc).
func Text(s string) string { return clean(s, false) }

// Line is [Text] for text shown on one line, such as a file name: line
// feeds and tabs are shown as ␊ and ␉ too.
func Line(s string) string { return clean(s, true) }

// What becomes of a rune outside ASCII.
type class uint8

const (
	keep     class = iota
	replace        // U+FFFD
	remove         // nothing
	joiner         // ZWJ, ZWNJ: kept between emoji or letters that join
	selector       // VS1–VS16: kept once after a visible character
	tag            // kept in a recommended subdivision flag
)

func classOf(r rune) class {
	switch {
	case r >= 0x80 && r <= 0x9f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return replace
	case r == 0x200c || r == 0x200d:
		return joiner
	case r >= 0xfe00 && r <= 0xfe0f:
		return selector
	case r >= 0xe0000 && r <= 0xe007f:
		return tag
	case r == 0x00ad, r == 0x034f, r == 0x061c, r == 0x115f, r == 0x1160,
		r == 0x17b4, r == 0x17b5, r == 0x180e, r == 0x200b, r == 0x200e, r == 0x200f,
		r >= 0x2060 && r <= 0x2064, r >= 0x206a && r <= 0x206f, r == 0x3164,
		r == 0xfeff, r == 0xffa0, r >= 0xfff9 && r <= 0xfffb,
		r >= 0x1d173 && r <= 0x1d17a, r >= 0xe0100 && r <= 0xe01ef:
		return remove
	}
	return keep
}

// Hidden reports whether r, a valid rune outside ASCII, is one that [Text]
// never passes as it is: a C1 control, a bidi control or an invisible
// character, as opposed to those it keeps only where they join or select
// (joiners, variation selectors 1–16, tags in subdivision flags).
func Hidden(r rune) bool {
	c := classOf(r)
	return c == replace || c == remove
}

// MaxLen is the most bytes that a rune r of w bytes in s (w == 1 and r ==
// U+FFFD for a byte that is not UTF-8) becomes in Text(s).
func MaxLen(r rune, w int) int {
	switch {
	case r == '\r':
		return 1
	case r < 0x20 && r != '\n' && r != '\t', r == 0x7f, r == utf8.RuneError && w == 1:
		return 3
	}
	switch classOf(r) {
	case replace:
		return 3
	case remove:
		return 0
	}
	return w
}

// subdivisionFlags are the tag sequences kept after U+1F3F4 (a black
// flag): England, Scotland and Wales, each ended by the cancel tag.
var subdivisionFlags = []string{tags("gbeng"), tags("gbsct"), tags("gbwls")}

func tags(s string) string {
	var b strings.Builder
	for _, c := range s {
		b.WriteRune(0xe0000 + c)
	}
	b.WriteRune(0xe007f)
	return b.String()
}

// pictographic reports whether r is an emoji's base, roughly Unicode's
// Extended_Pictographic (a superset: what a joiner may join).
func pictographic(r rune) bool {
	switch {
	case r == 0xa9, r == 0xae, r == 0x203c, r == 0x2049, r == 0x2122, r == 0x2139,
		r >= 0x2194 && r <= 0x21aa, r >= 0x2300 && r <= 0x23ff, r == 0x24c2,
		r >= 0x25a0 && r <= 0x27bf, r >= 0x2934 && r <= 0x2935, r >= 0x2b00 && r <= 0x2bff,
		r == 0x3030, r == 0x303d, r == 0x3297, r == 0x3299,
		r >= 0x1f000 && r <= 0x1faff, r >= 0x1fc00 && r <= 0x1fffd:
		return true
	}
	return false
}

// joining reports whether r is a letter or mark of a script in which
// joiners choose letter forms (everything past Latin, Greek and Cyrillic).
func joining(r rune) bool {
	return r >= 0x0590 && (unicode.IsLetter(r) || unicode.IsMark(r)) && classOf(r) == keep
}

// firstUnsafe returns the index of the first byte of s that may change,
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
		if r == utf8.RuneError && n == 1 || classOf(r) != keep {
			return i
		}
		i += n
	}
	return -1
}

func clean(s string, line bool) string {
	i := firstUnsafe(s, line)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	var st state
	if i > 0 {
		st.saw(utf8.DecodeLastRuneInString(s[:i]))
	}
	st.run(&b, s[i:], line, true)
	return b.String()
}

// state is what a decision needs of the text already written: its last
// rune, and whether the last character (past its selectors) was an emoji.
type state struct {
	last  rune // 0 at the start
	emoji bool
}

func (st *state) saw(r rune, _ int) {
	if classOf(r) != selector {
		st.emoji = pictographic(r) // skin tones too
	}
	st.last = r
}

// run writes s neutralised to b and returns how many bytes of it it used:
// all of them when final, else it stops before a tail whose fate depends
// on what comes next (a CR, a cut rune, a joiner, a flag's tags).
func (st *state) run(b *strings.Builder, s string, line, final bool) int {
	i := 0
runes:
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '\r' && !line:
				if i+1 == len(s) && !final {
					return i
				}
				b.WriteByte('\n')
				st.saw('\n', 1)
				if i+1 < len(s) && s[i+1] == '\n' {
					i++
				}
			case c == '\n' && !line, c == '\t' && !line, c >= 0x20 && c != 0x7f:
				b.WriteByte(c)
				st.saw(rune(c), 1)
			case c == 0x7f:
				b.WriteRune('\u2421') // ␡
				st.saw('\u2421', 3)
			default:
				b.WriteRune(0x2400 + rune(c)) // ␀ … ␟
				st.saw(0x2400+rune(c), 3)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			if !final && !utf8.FullRuneInString(s[i:]) {
				return i
			}
			b.WriteRune(utf8.RuneError)
			st.saw(utf8.RuneError, 3)
			i++
			continue
		}
		out := true
		switch classOf(r) {
		case replace:
			b.WriteRune(utf8.RuneError)
			st.saw(utf8.RuneError, 3)
			out = false
		case remove:
			out = false
		case joiner:
			if !final && !utf8.FullRuneInString(s[i+n:]) {
				return i // the next rune decides
			}
			next, _ := utf8.DecodeRuneInString(s[i+n:])
			out = r == 0x200d && st.emoji && pictographic(next) || joining(st.last) && joining(next)
		case selector:
			sc := classOf(st.last)
			out = st.last != 0 && unicode.IsGraphic(st.last) && !unicode.IsSpace(st.last) && sc != selector && sc != joiner
		case tag:
			out = false
			if st.last == 0x1f3f4 {
				rest := s[i:]
				for _, f := range subdivisionFlags {
					if strings.HasPrefix(rest, f) {
						b.WriteString(f)
						st.saw(0xe007f, 4)
						i += len(f)
						continue runes
					}
					if !final && len(rest) < len(f) && strings.HasPrefix(f, rest) {
						return i // may become a flag
					}
				}
			}
		}
		if out {
			b.WriteString(s[i : i+n])
			st.saw(r, n)
		}
		i += n
	}
	return i
}

// Stream neutralises text that comes in pieces (a model's answer, as it is
// written) as [Text] does the whole: what it returns for all the pieces,
// and Flush, is Text of them joined. It holds back the few bytes whose
// fate depends on what follows. The zero value is ready to use.
type Stream struct {
	st      state
	pending string
}

// Write adds a piece and returns what is now decided of the text.
func (s *Stream) Write(p string) string {
	s.pending += p
	var b strings.Builder
	n := s.st.run(&b, s.pending, false, false)
	s.pending = s.pending[n:]
	return b.String()
}

// Flush returns the rest: the text is complete.
func (s *Stream) Flush() string {
	var b strings.Builder
	s.st.run(&b, s.pending, false, true)
	s.pending = ""
	return b.String()
}
