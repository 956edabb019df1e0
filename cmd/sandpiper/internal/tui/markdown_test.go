package tui

import (
	"strings"
	"testing"

	xansi "github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"
)

func TestCleanMarkdown(t *testing.T) {
	for _, test := range []struct {
		name, in, want string
	}{
		{"plain", "**bold** & more", "**bold** & more"},
		{"raw escape", "a\x1b[2Jb", "a␛[2Jb"},
		{"decimal ESC", "&#27;[31m", "␛[31m"},
		{"hex ESC", "&#x1B;]0;t&#7;", "␛]0;t␇"},
		{"C1", "&#155;", "\uFFFD"},
		{"bidi", "&#8238;", "\uFFFD"},
		{"printable", "&#960; &#x3C0;", "&#960; &#x3C0;"},
		{"line feed and tab", "&#10;&#9;", "&#10;&#9;"},
		{"NUL", "&#0;", "&#0;"},
		{"too large", "&#99999999;", "&#99999999;"},
		{"named", "&amp; &lt;", "&amp; &lt;"},
	} {
		t.Run(test.name, func(t *testing.T) {
			if got := cleanMarkdown(test.in); got != test.want {
				t.Errorf("cleanMarkdown(%q) = %q, want %q", test.in, got, test.want)
			}
		})
	}
}

// TestRenderOnlySGR renders hostile Markdown in colour: the output may
// hold SGR sequences (glamour's), and no other escape or control.
func TestRenderOnlySGR(t *testing.T) {
	for _, profile := range []termenv.Profile{termenv.Ascii, termenv.ANSI, termenv.ANSI256, termenv.TrueColor} {
		md := newMarkdown(60, profile, answerStyle(true))
		for _, in := range []string{
			"&#27;]52;c;eA==&#7; **&#x1b;[2J** `&#27;` [l](http://x/&#27;) ![i](&#27;)",
			"```\n\x1b[2J&#27;\n```",
			"| &#27; | b |\n|---|---|\n| \x07 | &#155; |",
			"&#8238;txt.exe <span>&#27;</span>",
		} {
			out := md.render(in)
			if stripped := stripSGR(out); strings.ContainsAny(stripped, "\x1b\x07\u009b\u202e") {
				t.Errorf("profile %v: render(%q) = %q: holds a control", profile, in, out)
			}
		}
	}
}

func TestOnlySGR(t *testing.T) {
	for _, test := range []struct{ in, want string }{
		{"\x1b[1;38;5;2mok\x1b[0m", "\x1b[1;38;5;2mok\x1b[0m"},
		{"\x1b[2J\x1b]0;x\a", "␛[2J␛]0;x␇"},
		{"\x1b", "␛"},
		{"\x1b[", "␛["},
		{"a\rb", "a\nb"},
	} {
		if got := onlySGR(test.in); got != test.want {
			t.Errorf("onlySGR(%q) = %q, want %q", test.in, got, test.want)
		}
	}
}

func TestTrimBlock(t *testing.T) {
	for _, test := range []struct{ in, want string }{
		{"\n  a   \n\n  b  \n\n", "  a\n\n  b"},
		{"  a\x1b[0m   \x1b[0m", "  a\x1b[0m\x1b[0m"},
		{"\x1b[1m   \x1b[0m\n x", " x"},
		{"   ", ""},
	} {
		if got := trimBlock(test.in); got != test.want {
			t.Errorf("trimBlock(%q) = %q, want %q", test.in, got, test.want)
		}
	}
}

func TestCompleteBlocks(t *testing.T) {
	for _, test := range []struct {
		name, in, done string
	}{
		{"one paragraph", "Some text", ""},
		{"paragraph ended", "Some text\n\n", ""},
		{"next started", "Para one.\n\nPara", "Para one.\n\n"},
		{"two done", "One.\n\nTwo.\n\nThr", "One.\n\nTwo.\n\n"},
		{"indented continuation", "1. item\n\n   more", ""},
		{"list then paragraph", "- a\n- b\n\nNext", "- a\n- b\n\n"},
		{"loose list", "1. a\n\n2. b\n\n3", ""},
		{"loose list ended", "1. a\n\n2. b\n\nNext", "1. a\n\n2. b\n\n"},
		{"thematic break", "a\n\n---\n\nb", "a\n\n---\n\n"},
		{"open fence", "```\ncode\n\nmore code\n", ""},
		{"closed fence", "```py\ncode\n\nx\n```\n\nAfter", "```py\ncode\n\nx\n```\n\n"},
		{"longer fence", "````\n```\n\ninner\n````\n\nA", "````\n```\n\ninner\n````\n\n"},
		{"tilde fence", "~~~\n\nx\n~~~\n\nA", "~~~\n\nx\n~~~\n\n"},
		{"table", "| a |\n|---|\n| 1 |\n\nAfter", "| a |\n|---|\n| 1 |\n\n"},
	} {
		t.Run(test.name, func(t *testing.T) {
			if got := test.in[:completeBlocks(test.in)]; got != test.done {
				t.Errorf("completeBlocks(%q) cuts %q, want %q", test.in, got, test.done)
			}
		})
	}
}

// TestStreamedAnswer checks that an answer printed a block at a time
// reads as the answer rendered at once.
func TestStreamedAnswer(t *testing.T) {
	text := "Intro **bold**.\n\n1. one\n2. two\n\n3. three\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```python\nx = 1\n\ny = 2\n```\n\nEnd."
	md := newMarkdown(60, termenv.Ascii, answerStyle(true))
	var parts []string
	rest := ""
	for _, r := range text {
		rest += string(r)
		if n := completeBlocks(rest); n > 0 {
			parts = append(parts, md.render(rest[:n]))
			rest = rest[n:]
		}
	}
	parts = append(parts, md.render(rest))
	got := stripSGR(strings.Join(parts, "\n\n"))
	want := stripSGR(md.render(text))
	if got != want {
		t.Errorf("streamed:\n%s\nat once:\n%s", got, want)
	}
}

// TestMarkdownTableNaturalWidth: a small table keeps its own width on a
// wide terminal, rather than being stretched across it; the text around
// it still wraps at the terminal's width.
func TestMarkdownTableNaturalWidth(t *testing.T) {
	md := newMarkdown(100, termenv.Ascii, answerStyle(true))
	long := strings.Repeat("word ", 30)
	out := md.render("Before. " + long + "\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nAfter.")
	lines := strings.Split(out, "\n")
	var table []string
	for _, l := range lines {
		if strings.Contains(l, "│") || strings.Contains(l, "─") {
			table = append(table, l)
		}
	}
	if len(table) < 3 {
		t.Fatalf("no table in:\n%s", out)
	}
	for _, l := range table {
		if w := xansi.StringWidth(strings.TrimRight(l, " ")); w > 20 {
			t.Errorf("table line %d columns wide, want its own width:\n%s", w, out)
		}
	}
	if !strings.Contains(out, "Before.") || !strings.Contains(out, "After.") || xansi.StringWidth(lines[0]) < 80 {
		t.Errorf("the text around the table:\n%s", out)
	}
	// Fenced code holding a table's lines is code.
	if segs := splitTables("```\n| a | b |\n|---|---|\n```"); len(segs) != 1 || segs[0].width != 0 {
		t.Errorf("splitTables of fenced code = %+v", segs)
	}
}
