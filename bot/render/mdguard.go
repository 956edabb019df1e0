package render

import (
	"strings"

	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// Streamed text is standard Markdown (chat.*Stream's markdown_text), so
// Mrkdwn, which escapes for mrkdwn, does not apply to it; it
// still applies where the answer is posted the old way (the fallback).
// Guard keeps mrkdwn's guarantees for streamed Markdown instead, by
// putting a zero-width space (invisible, so the text reads the same)
// where Slack or Markdown would otherwise act on what the model wrote:
//
//   - after < when < starts a Slack entity (<!channel>, <@U…>, <#C…>,
//     <url|text>) or an autolink or tag, so nothing pings or links that
//     way (in code, where a zero-width space would spoil copying, only
//     before !, @, # and a URL scheme);
//   - after @ in @channel, @here and @everyone;
//   - between ] and ( or :, so no [text](url) link or ![image](url)
//     hides its address behind other text, and no reference definition
//     ([text]: url) gives one;
//   - after & before a letter or #, so no HTML entity decodes into one
//     of the above.
//
// The model's text is neutralised first ([safetext.Stream], what
// [safetext.Text] does to a whole text): controls and bidi controls are
// shown, invisible characters (zero-width spaces the model wrote among
// them) removed, so the only invisible characters that reach Slack are
// the guard's own zero-width spaces and the joiners of emoji and scripts.
// Because deltas cut the text anywhere, the guard holds back the few
// bytes it cannot decide on yet (a trailing "<", "@chan", "]", a backtick
// run, a CR, a joiner, the start of a line that may open a code fence)
// until more text or [Guard.Flush] comes; what it returns never changes
// afterwards.
type Guard struct {
	clean     safetext.Stream
	pending   string
	lineStart bool // the next byte starts a line
	fence     bool // inside a fenced code block
	span      int  // backtick run that opened the current code span; 0: none
}

const zwsp = "\u200b"

// NewGuard returns a guard for a new piece of Markdown.
func NewGuard() *Guard { return &Guard{lineStart: true} }

// Write adds a piece of the model's text and returns what is now safe to
// send.
func (g *Guard) Write(s string) string {
	g.pending += g.clean.Write(s)
	return g.take(false)
}

// Flush returns the text held back: the model has finished.
func (g *Guard) Flush() string {
	g.pending += g.clean.Flush()
	return g.take(true)
}

// broadcasts are the words after @ that notify a whole channel.
var broadcasts = []string{"channel", "here", "everyone"}

func (g *Guard) take(final bool) string {
	p := g.pending
	var b strings.Builder
	i := 0
	more := func() bool { return !final } // whether an undecided tail may wait
loop:
	for i < len(p) {
		if g.lineStart {
			j := i
			for j < len(p) && j-i < 3 && p[j] == ' ' {
				j++
			}
			rest := p[j:]
			if more() && (j == len(p) || len(rest) < 3 && strings.Trim(rest, rest[:1]) == "" && (rest[0] == '`' || rest[0] == '~')) {
				break loop
			}
			g.lineStart = false
			if strings.HasPrefix(rest, "```") || strings.HasPrefix(rest, "~~~") {
				g.fence, g.span = !g.fence, 0
				b.WriteString(p[i : j+3])
				i = j + 3
				continue
			}
		}
		code := g.fence || g.span > 0
		c := p[i]
		next := byte(0)
		if i+1 < len(p) {
			next = p[i+1]
		} else if more() && strings.IndexByte("`<]@&", c) >= 0 {
			break loop
		}
		switch c {
		case '\n':
			b.WriteByte(c)
			g.lineStart, g.span = true, 0
			i++
			continue
		case '`':
			if g.fence {
				break
			}
			n := 1
			for i+n < len(p) && p[i+n] == '`' {
				n++
			}
			if i+n == len(p) && more() {
				break loop
			}
			switch g.span {
			case 0:
				g.span = n
			case n:
				g.span = 0
			}
			b.WriteString(p[i : i+n])
			i += n
			continue
		case '<':
			scheme, decided := schemeAt(p[i+1:])
			if !decided && more() {
				break loop
			}
			b.WriteByte(c)
			i++
			if next == '!' || next == '@' || next == '#' || scheme || !code && (isLetter(next) || next == '/') {
				b.WriteString(zwsp)
			}
			continue
		case ']':
			b.WriteByte(c)
			i++
			if !g.fence && (next == '(' || next == ':') {
				b.WriteString(zwsp)
			}
			continue
		case '&':
			b.WriteByte(c)
			i++
			if !code && (isLetter(next) || next == '#') {
				b.WriteString(zwsp)
			}
			continue
		case '@':
			word, decided := broadcastAt(p[i+1:], final)
			if !decided && more() {
				break loop
			}
			b.WriteByte(c)
			i++
			if word {
				b.WriteString(zwsp)
			}
			continue
		}
		b.WriteByte(c)
		i++
	}
	g.pending = p[i:]
	return b.String()
}

// schemeAt reports whether s starts with a URL scheme and a colon
// ("https:", "mailto:"), and whether that is decided by what s holds.
func schemeAt(s string) (yes, decided bool) {
	for k := 0; k < len(s) && k <= 32; k++ {
		c := s[k]
		switch {
		case c == ':':
			return k > 0, true
		case isLetter(c), k > 0 && (c >= '0' && c <= '9' || c == '+' || c == '.' || c == '-'):
		default:
			return false, true
		}
	}
	return false, len(s) > 32
}

// broadcastAt reports whether s starts with a word of broadcasts ending
// there, and whether that is decided by what s holds (always, when s is
// the end of the text).
func broadcastAt(s string, end bool) (yes, decided bool) {
	for _, w := range broadcasts {
		n := min(len(s), len(w))
		if !strings.EqualFold(s[:n], w[:n]) {
			continue
		}
		if n == len(s) {
			if end {
				return n == len(w), true
			}
			return false, false // too short to tell
		}
		if n < len(w) {
			continue
		}
		if c := s[n]; !isLetter(c) && !(c >= '0' && c <= '9') && c != '_' {
			return true, true
		}
	}
	return false, true
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
