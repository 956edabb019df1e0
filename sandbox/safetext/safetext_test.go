package safetext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestText(t *testing.T) {
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Text(tc.in); got != tc.want {
				t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
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
// tab, a C1 control, a bidi control or invalid UTF-8, and that clean text
// is left alone.
func FuzzText(f *testing.F) {
	for _, s := range []string{"", "a\x1b[31mb", "\u202e", "\r\n\r", "\xff\xfe", "\u0085", "ok\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, line := range []bool{false, true} {
			out := clean(s, line)
			if !utf8.ValidString(out) {
				t.Fatalf("invalid UTF-8 out of %q: %q", s, out)
			}
			for _, r := range out {
				if r < 0x20 && (line || r != '\n' && r != '\t') || r == 0x7f || Replaced(r) {
					t.Fatalf("clean(%q, %v) = %q holds %U", s, line, out, r)
				}
			}
			if firstUnsafe(s, line) < 0 && out != s {
				t.Fatalf("safe %q changed to %q", s, out)
			}
		}
	})
}
