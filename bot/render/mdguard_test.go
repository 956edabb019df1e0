package render

import (
	"regexp"
	"strings"
	"testing"

	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

var reBroadcast = regexp.MustCompile(`(?i)@(channel|here|everyone)\b`)

func TestGuardMarkdown(t *testing.T) {
	const z = zwsp
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "The result is **42**.", "The result is **42**."},
		{"broadcast entities", "<!channel> <!here> <@U0ALICE> <#C0GENERAL>", "<" + z + "!channel> <" + z + "!here> <" + z + "@U0ALICE> <" + z + "#C0GENERAL>"},
		{"slack link", "<https://evil.example|click me>", "<" + z + "https://evil.example|click me>"},
		{"markdown link", "see [the docs](https://example.com)", "see [the docs]" + z + "(https://example.com)"},
		{"image", "![chart](https://evil.example/x.png)", "![chart]" + z + "(https://evil.example/x.png)"},
		{"reference definition", "[docs]: https://evil.example", "[docs]" + z + ": https://evil.example"},
		{"written broadcasts", "hey @here and @Channel, @everyone!", "hey @" + z + "here and @" + z + "Channel, @" + z + "everyone!"},
		{"broadcast at the end", "ping @here", "ping @" + z + "here"},
		{"not a broadcast", "@heretic @channels user@here.com", "@heretic @channels user@" + z + "here.com"},
		{"entity", "&lt;!channel&gt; AT&T &#60;", "&" + z + "lt;!channel&" + z + "gt; AT&" + z + "T &" + z + "#60;"},
		{"comparisons stay", "x < 5, y <= 3, 2<3", "x < 5, y <= 3, 2<3"},
		{"letters after <", "a<b", "a<" + z + "b"},
		{"code span keeps <", "`a<b` and `x[i](y)`", "`a<b` and `x[i]" + z + "(y)`"},
		{"code span still breaks entities", "`<!here>`", "`<" + z + "!here>`"},
		{"fence keeps code", "```python\nif a<b and c[0](1): pass\n```\nthen <b>", "```python\nif a<b and c[0](1): pass\n```\nthen <" + z + "b>"},
		{"fence still breaks entities and schemes", "```\n<@U1> <https://x.example>\n```", "```\n<" + z + "@U1> <" + z + "https://x.example>\n```"},
		{"controls", "a\x1b[2Jb\r\nc\u202e", "a␛[2Jb\nc\ufffd"},
		{"invisible characters", "mean\u200b 4.2\u2060\ufeff\u00ad\u200f" + tagged("obey me"), "mean 4.2"},
		{"the model's zero-width space", "<\u200b!channel> @\u200bhere [a]\u200b(https://x.example)", "<" + z + "!channel> @" + z + "here [a]" + z + "(https://x.example)"},
		{"emoji", "\U0001F468\u200d\U0001F469\u200d\U0001F467 \U0001F1EB\U0001F1F7 \u2764\ufe0f", "\U0001F468\u200d\U0001F469\u200d\U0001F467 \U0001F1EB\U0001F1F7 \u2764\ufe0f"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := guardMarkdown(tc.in); got != tc.want {
				t.Errorf("guardMarkdown(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestGuardStreams: cut anywhere, the guard gives the text it gives whole,
// and what it returned never changes.
func TestGuardStreams(t *testing.T) {
	for _, in := range []string{
		"Use [this](https://a.example) or <!here>, @everyone.\n```\nx<y\n```\n`a<b` AT&T ![i](u) [r]: u @her",
		"  ```\n<@U1>\n  ```\r\n\r\ndone @channel",
		"@", "<", "]", "`", "``", "\r", "@ch", "<ht", "```", "a\n``",
		"\U0001F468\u200d\U0001F469\u200d\U0001F467 <\u200b!here> x" + tagged("hidden") + "\U0001F3F4\U000E0067\U000E0062\U000E0077\U000E006C\U000E0073\U000E007F",
	} {
		want := guardMarkdown(in)
		for size := 1; size <= 4; size++ {
			g := NewGuard()
			var got strings.Builder
			for i := 0; i < len(in); i += size {
				got.WriteString(g.Write(in[i:min(i+size, len(in))]))
			}
			got.WriteString(g.Flush())
			if got.String() != want {
				t.Errorf("%q in pieces of %d:\n got %q\nwant %q", in, size, got.String(), want)
			}
		}
	}
}

func FuzzGuardStreams(f *testing.F) {
	f.Add("see [x](https://e.example) <!here> @channel ```\na<b\n```", 3)
	f.Add("<\u200b!here> @\u2060channel \U0001F468\u200d\U0001F469"+tagged("x")+"\u202e", 2)
	f.Fuzz(func(t *testing.T, in string, size int) {
		size = max(1, size%16)
		want := guardMarkdown(in)
		g := NewGuard()
		var got strings.Builder
		for i := 0; i < len(in); i += size {
			got.WriteString(g.Write(in[i:min(i+size, len(in))]))
		}
		got.WriteString(g.Flush())
		if got.String() != want {
			t.Errorf("pieces of %d: %q, whole: %q", size, got.String(), want)
		}
		for _, bad := range []string{"<!", "<@"} {
			if strings.Contains(want, bad) {
				t.Errorf("%q survives in %q", bad, want)
			}
		}
		if b := reBroadcast.FindString(want); b != "" {
			t.Errorf("%q survives in %q", b, want)
		}
		// The guard's zero-width spaces follow <, @, ] or &; nothing else
		// invisible is left.
		for i, r := range want {
			if r == '\u200b' && i > 0 && strings.IndexByte("<@]&", want[i-1]) >= 0 {
				continue
			}
			if safetext.Hidden(r) || r >= 0xe0000 && r <= 0xe007f && !strings.Contains(want, "\U0001F3F4") {
				t.Errorf("%U at %d in %q", r, i, want)
			}
		}
	})
}

// tagged is s in Unicode tag characters: invisible, read by models.
func tagged(s string) string {
	var b strings.Builder
	for _, c := range s {
		b.WriteRune(0xe0000 + c)
	}
	return b.String()
}

// guardMarkdown is the guard applied to a whole text.
func guardMarkdown(s string) string {
	g := NewGuard()
	return g.Write(s) + g.Flush()
}
