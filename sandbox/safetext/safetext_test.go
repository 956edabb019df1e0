package safetext

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestText(t *testing.T) {
	const (
		family   = "\U0001F468\u200d\U0001F469\u200d\U0001F467" // 👨‍👩‍👧
		rainbow  = "\U0001F3F3\ufe0f\u200d\U0001F308"           // 🏳️‍🌈
		coder    = "\U0001F9D1\U0001F3FD\u200d\U0001F4BB"       // 🧑🏽‍💻
		france   = "\U0001F1EB\U0001F1F7"                       // 🇫🇷
		scotland = "\U0001F3F4\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F"
		heart    = "\u2764\ufe0f" // ❤️
		keycap   = "1\ufe0f\u20e3"
	)
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "x = 42\n\tok", "x = 42\n\tok"},
		{"unicode", "résumé 📊 — π", "résumé 📊 — π"},
		{"CSI colour", "\x1b[31mred\x1b[0m", "␛[31mred␛[0m"},
		{"OSC title with BEL", "\x1b]0;pwned\x07", "␛]0;pwned␇"},
		{"OSC 52 clipboard", "\x1b]52;c;cm0gLXJmIC8=\x1b\\", "␛]52;c;cm0gLXJmIC8=␛\\"},
		{"cursor up and erase", "ok\x1b[1A\x1b[2Khidden", "ok␛[1A␛[2Khidden"},
		{"carriage return overwrite", "rm -rf /\rls   ", "rm -rf /\nls   "},
		{"CR LF", "a\r\nb\r\n", "a\nb\n"},
		{"C1 CSI", "a\u009b31mb", "a\ufffd31mb"},
		{"NUL and DEL", "a\x00b\x7f", "a␀b␡"},
		{"bidi override", "abc\u202etxt.exe", "abc\ufffdtxt.exe"},
		{"bidi isolates", "\u2066x\u2069\u2067y\u2068", "\ufffdx\ufffd\ufffdy\ufffd"},
		{"invalid UTF-8", "a\xffb\xc3", "a\ufffdb\ufffd"},
		{"backspace", "secret\x08\x08\x08\x08\x08\x08public", "secret␈␈␈␈␈␈public"},
		{"tag characters", "Sales rose 4%.\U000E0001\U000E0069\U000E0067\U000E006E\U000E006F\U000E0072\U000E0065\U000E007F", "Sales rose 4%."},
		{"tags after an emoji", "📊\U000E0068\U000E0069", "📊"},
		{"zero width", "pass\u200bword \u2060join \ufeffBOM soft\u00adhyphen", "password join BOM softhyphen"},
		{"direction marks", "a\u200eb\u200fc\u061cd", "abcd"},
		{"invisible operators and fillers", "f\u2061(x) 2\u2062x \u3164\u115f\u180e.", "f(x) 2x ."},
		{"joiners outside words", "w\u200dor\u200cd \u200d", "word "},
		{"variation selector smuggling", "😀\ufe01\ufe02\U000E0100\U000E01EF", "😀\ufe01"},
		{"a selector alone", "\ufe0fx \ufe0f", "x "},
		{"family", family, family},
		{"rainbow flag", rainbow, rainbow},
		{"skin tone", coder, coder},
		{"flag", france + " " + scotland, france + " " + scotland},
		{"a flag that is not recommended", "\U0001F3F4\U000E0075\U000E0073\U000E0074\U000E0078\U000E007F", "\U0001F3F4"},
		{"heart and keycap", heart + keycap, heart + keycap},
		{"Persian", "می\u200cخواهم", "می\u200cخواهم"},
		{"Devanagari", "क्\u200dष", "क्\u200dष"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Text(tc.in); got != tc.want {
				t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
			}
			var st Stream
			var got strings.Builder
			for _, r := range tc.in {
				got.WriteString(st.Write(string(r)))
			}
			got.WriteString(st.Flush())
			if got.String() != tc.want {
				t.Errorf("Stream, a rune at a time: %q, want %q", got.String(), tc.want)
			}
		})
	}
}

func TestLine(t *testing.T) {
	for in, want := range map[string]string{
		"chart.png":         "chart.png",
		"a\nb.csv":          "a␊b.csv",
		"tab\there":         "tab␉here",
		"x\r.txt":           "x␍.txt",
		"evil\u202egnp.exe": "evil\ufffdgnp.exe",
		"report\u200b.csv":  "report.csv",
		"\x1b[2J\x1b[H.png": "␛[2J␛[H.png",
		"données 2024.xlsx": "données 2024.xlsx",
	} {
		if got := Line(in); got != want {
			t.Errorf("Line(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUnchangedTextIsNotCopied(t *testing.T) {
	s := strings.Repeat("plain text\n", 100)
	if allocs := testing.AllocsPerRun(100, func() { Text(s) }); allocs != 0 {
		t.Errorf("Text of clean text allocated %v times", allocs)
	}
}

// FuzzText checks that no output holds a control other than line feed and
// tab, a C1 control, a bidi control or an invisible character (joiners,
// selectors and tags only where they join, select or make a flag), or
// invalid UTF-8; that clean text is left alone; that Text is idempotent;
// and that a stream in pieces gives what the whole gives.
func FuzzText(f *testing.F) {
	for _, s := range []string{"", "a\x1b[31mb", "\u202e", "\r\n\r", "\xff\xfe", "\u0085", "ok\n",
		"\U000E0041\U000E0042", "\U0001F3F4\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F",
		"\U0001F468\u200d\U0001F469\u200d\U0001F467", "a\u200b\u200d\ufe0f\ufe0f\ufeff", "\u2764\ufe0f\u200d\U0001F525", "می\u200cخو"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, size int) {
		for _, line := range []bool{false, true} {
			out := clean(s, line)
			if !utf8.ValidString(out) {
				t.Fatalf("invalid UTF-8 out of %q: %q", s, out)
			}
			if i := notShown(out, line); i >= 0 {
				t.Fatalf("clean(%q, %v) = %q holds %q at %d", s, line, out, out[i:], i)
			}
			if firstUnsafe(s, line) < 0 && out != s {
				t.Fatalf("safe %q changed to %q", s, out)
			}
			if again := clean(out, line); again != out {
				t.Fatalf("clean(%q, %v) = %q, and again %q", s, line, out, again)
			}
		}
		size = max(1, size%16)
		var st Stream
		var got strings.Builder
		for i := 0; i < len(s); i += size {
			got.WriteString(st.Write(s[i:min(i+size, len(s))]))
		}
		got.WriteString(st.Flush())
		if want := Text(s); got.String() != want {
			t.Fatalf("%q in pieces of %d: %q, whole: %q", s, size, got.String(), want)
		}
	})
}

// notShown returns the index of the first rune of s that a reader would
// not see as it is, or -1. It is written apart from the package's own
// walk: joiners must stand between two emoji or two joining letters,
// selectors after a visible character, and tags only in the three
// subdivision flags.
func notShown(s string, line bool) int {
	for _, f := range subdivisionFlags {
		s = strings.ReplaceAll(s, "\U0001F3F4"+f, "\U0001F3F4"+strings.Repeat("x", len(f)))
	}
	var prev, base rune
	for i, r := range s {
		switch {
		case r < 0x20 && (line || r != '\n' && r != '\t'), r == 0x7f, Hidden(r), r >= 0xe0000 && r <= 0xe007f:
			return i
		case r == 0x200c || r == 0x200d:
			next, _ := utf8.DecodeRuneInString(s[i+len(string(r)):])
			if !(r == 0x200d && pictographic(base) && pictographic(next)) && !(joining(prev) && joining(next)) {
				return i
			}
		case r >= 0xfe00 && r <= 0xfe0f:
			if prev == 0 || !unicode.IsGraphic(prev) || unicode.IsSpace(prev) || prev == 0x200c || prev == 0x200d || prev >= 0xfe00 && prev <= 0xfe0f {
				return i
			}
		}
		if !(r >= 0xfe00 && r <= 0xfe0f) {
			base = r
		}
		prev = r
	}
	return -1
}
