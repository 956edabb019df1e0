package render

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestMarkdownToMrkdwn(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"bold", "The answer is **42**.", "The answer is *42*."},
		{"bold underscores", "__big__ deal", "*big* deal"},
		{"italic", "an *important* point", "an _important_ point"},
		{"italic underscore kept", "an _important_ point", "an _important_ point"},
		{"bold and italic", "**a** and *b*", "*a* and _b_"},
		{"strike", "~~wrong~~ right", "~wrong~ right"},
		{"link", "see [the docs](https://example.com/a?b=1)", "see <https://example.com/a?b=1|the docs>"},
		{"link text pipe", "[a|b](https://x.example)", "<https://x.example|a¦b>"},
		{"javascript link is text", "[x](javascript:alert(1))", "[x](javascript:alert(1))"},
		{"heading", "## Result", "*Result*"},
		{"bullets", "- one\n* two\n  + three", "• one\n• two\n  • three"},
		{"numbered kept", "1. first\n2. second", "1. first\n2. second"},
		{"quote", "> quoted *text*", "> quoted _text_"},
		{"rule", "---", "──────────"},
		{"inline code untouched", "use `a**2 * b*c` here", "use `a**2 * b*c` here"},
		{"fence drops language", "```python\nprint(1 < 2)\n```", "```\nprint(1 &lt; 2)\n```"},
		{"math stars", "2 * 3 * 4 = 24", "2 * 3 * 4 = 24"},
		{"channel ping escaped", "Hey <!channel> and <!here>", "Hey &lt;!channel&gt; and &lt;!here&gt;"},
		{"user ping escaped", "ask <@U123ABC>", "ask &lt;@U123ABC&gt;"},
		{"slack link escaped", "<https://evil.example|click>", "&lt;https://evil.example|click&gt;"},
		{"autolink", "<https://example.com>", "<https://example.com>"},
		{"ampersand", "a & b", "a &amp; b"},
		{"table", "| x | x² |\n|---|---|\n| 2 | 4 |\n| 10 | 100 |", "```\nx   x²\n───────\n2   4\n10  100\n```"},
		{"invisible characters", "pass\u200bword\u2060 \ufeff\u00ad4.2\U000E0069\U000E0067 \u202e!", "password 4.2 \ufffd!"},
		{"emoji kept", "\U0001F468\u200d\U0001F469\u200d\U0001F467 \U0001F1EB\U0001F1F7", "\U0001F468\u200d\U0001F469\u200d\U0001F467 \U0001F1EB\U0001F1F7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Mrkdwn(tc.in); got != tc.want {
				t.Errorf("markdownToMrkdwn(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestLinkShowsWhereItGoes: a link whose text names a place other than its
// target shows the target.
func TestLinkShowsWhereItGoes(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"text a different URL", "[https://bank.example/login](https://evil.example/x)", "<https://evil.example/x>"},
		{"text a bare domain", "[bank.example](https://evil.example/x)", "<https://evil.example/x>"},
		{"text a domain and a path", "[bank.example/login](https://evil.example/x)", "<https://evil.example/x>"},
		{"a domain among words", "[Log in at bank.example now](https://evil.example/x)", "<https://evil.example/x>"},
		{"text with www.", "[www.bank.example](https://evil.example/)", "<https://evil.example/>"},
		{"a target under the text's name", "[bank.example](https://bank.example.evil.example/)", "<https://bank.example.evil.example/>"},
		{"a user name that reads as a host", "[https://bank.example](https://bank.example@evil.example/login)", "<https://evil.example/login>"},
		{"punycode look-alike", "[bank.example](https://xn--bnk-6cd.example/)", "<https://xn--bnk-6cd.example/>"},
		{"IDN look-alike", "[bank.example](https://b\u0430nk.example/login)", "<https://xn--bnk-6cd.example/login>"},
		{"IDN text and target", "[b\u0430nk.example](https://b\u0430nk.example/login)", "<https://xn--bnk-6cd.example/login>"},
		{"IDN text, ASCII target", "[b\u0430nk.example](https://bank.example/)", "<https://bank.example/>"},
		{"an e-mail address for a web page", "[help@bank.example](https://evil.example/)", "<https://evil.example/>"},
		{"the site's own e-mail address", "[help@bank.example](https://bank.example/contact)", "<https://bank.example/contact|help@bank.example>"},
		{"e-mail to another address", "[support@bank.example](mailto:x@evil.example)", "<mailto:x@evil.example>"},
		{"the same host", "[https://docs.python.org/3/](https://docs.python.org/3/library/)", "<https://docs.python.org/3/library/|https://docs.python.org/3/>"},
		{"www. on one side", "[bank.example](https://www.bank.example/login)", "<https://www.bank.example/login|bank.example>"},
		{"case and a trailing dot", "[Bank.EXAMPLE.](https://bank.example/)", "<https://bank.example/|Bank.EXAMPLE.>"},
		{"words", "[the pandas docs](https://pandas.pydata.org/docs/)", "<https://pandas.pydata.org/docs/|the pandas docs>"},
		{"a version is no domain", "[pandas 2.2 release notes](https://pandas.pydata.org/docs/whatsnew/v2.2.0.html)", "<https://pandas.pydata.org/docs/whatsnew/v2.2.0.html|pandas 2.2 release notes>"},
		{"an e-mail link", "[write to us](mailto:help@bank.example)", "<mailto:help@bank.example|write to us>"},
		{"its own address", "[help@bank.example](mailto:help@bank.example)", "<mailto:help@bank.example|help@bank.example>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Mrkdwn(tc.in); got != tc.want {
				t.Errorf("Mrkdwn(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestSplitMrkdwn(t *testing.T) {
	code := "```\n" + strings.Repeat("line of code\n", 400) + "```"
	text := strings.Repeat("A paragraph of words. ", 200) + "\n" + code + "\nend"
	parts := SplitMrkdwn(text, 3000)
	if len(parts) < 3 {
		t.Fatalf("%d parts", len(parts))
	}
	var joined strings.Builder
	for i, p := range parts {
		if n := utf8.RuneCountInString(p); n > 3000 {
			t.Errorf("part %d has %d characters", i, n)
		}
		if strings.Count(p, "```")%2 != 0 {
			t.Errorf("part %d has an unclosed code block:\n%s", i, p)
		}
		joined.WriteString(p)
	}
	if got := strings.Count(joined.String(), "line of code"); got != 400 {
		t.Errorf("%d code lines after splitting, want 400", got)
	}
	if !strings.HasSuffix(parts[len(parts)-1], "end") {
		t.Errorf("last part %q", parts[len(parts)-1])
	}
}

func TestThousands(t *testing.T) {
	for in, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 5242880: "5,242,880", -1234: "-1,234"} {
		if got := Thousands(in); got != want {
			t.Errorf("thousands(%d) = %q, want %q", in, got, want)
		}
	}
}

// TestSplitMrkdwnKeepsEntities: a long line of escaped text is never cut
// inside &amp;, &lt; or &gt;, which Slack would show as broken text.
func TestSplitMrkdwnKeepsEntities(t *testing.T) {
	for shift := range 5 {
		text := strings.Repeat("x", shift) + strings.Repeat("&lt;td&gt;&amp;", 700)
		for i, p := range SplitMrkdwn(text, 3000) {
			if utf8.RuneCountInString(p) > 3000 {
				t.Errorf("shift %d: part %d has %d characters", shift, i, utf8.RuneCountInString(p))
			}
			if j := strings.LastIndexByte(p, '&'); j >= 0 && !strings.Contains(p[j:], ";") {
				t.Errorf("shift %d: part %d ends inside an entity: …%s", shift, i, p[max(0, len(p)-12):])
			}
			if strings.HasPrefix(p, "lt;") || strings.HasPrefix(p, "gt;") || strings.HasPrefix(p, "amp;") || strings.HasPrefix(p, "t;") || strings.HasPrefix(p, "mp;") || strings.HasPrefix(p, "p;") || strings.HasPrefix(p, ";") {
				t.Errorf("shift %d: part %d starts inside an entity: %s…", shift, i, p[:12])
			}
		}
	}
}
