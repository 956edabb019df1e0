package render

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"

	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// Escape makes text safe for Slack's mrkdwn: &, < and > become entities,
// so <!channel>, <@U…> and <url|text> written by a model or a program are
// shown as typed instead of pinging or linking.
func Escape(s string) string {
	return mrkdwnEscaper.Replace(s)
}

var mrkdwnEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// codeBlock returns s as a mrkdwn code block. Backtick runs that would end
// the block early are broken with a zero-width space.
func codeBlock(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		s = " "
	}
	s = Escape(s)
	// One pass can leave a run of backticks across two replacements
	// ("``````" becomes "``\u200b```\u200b`"); repeat until none is left.
	for strings.Contains(s, "```") {
		s = strings.ReplaceAll(s, "```", "``\u200b`")
	}
	return "```\n" + s + "\n```"
}

// shownCost bounds how many characters r takes inside a code block: &, <
// and > become entities, and runs of backticks get zero-width spaces.
func shownCost(r rune) int {
	switch r {
	case '&':
		return len("&amp;")
	case '<', '>':
		return len("&lt;")
	case '`':
		return 2
	}
	return 1
}

// headShown returns the longest head of s whose code block fits in n
// characters of Slack text, and whether it had to cut.
func headShown(s string, n int) (string, bool) {
	cost := 0
	for i, r := range s {
		if cost += shownCost(r); cost > n {
			return s[:i], true
		}
	}
	return s, false
}

// tailShown is headShown from the end: the longest tail that fits.
func tailShown(s string, n int) (string, bool) {
	cost := 0
	for i := len(s); i > 0; {
		r, size := utf8.DecodeLastRuneInString(s[:i])
		if cost += shownCost(r); cost > n {
			return s[i:], true
		}
		i -= size
	}
	return s, false
}

var (
	reHeading  = regexp.MustCompile(`^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$`)
	reBullet   = regexp.MustCompile(`^(\s*)[-*+]\s+(.*)$`)
	reRule     = regexp.MustCompile(`^\s{0,3}([-*_])(\s*[-*_]){2,}\s*$`)
	reTableSep = regexp.MustCompile(`^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$`)
	reLink     = regexp.MustCompile(`\[([^\[\]]+)\]\(\s*(https?://[^\s()<>|]+|mailto:[^\s()<>|]+)\s*\)`)
	reAutoLink = regexp.MustCompile(`&lt;(https?://[^\s<>|&]+)&gt;`)
	reBold     = regexp.MustCompile(`\*\*([^*\n]+?)\*\*|__([^_\n]+?)__`)
	reItalic   = regexp.MustCompile(`(^|[^\w*])\*([^*\s][^*\n]*?)\*($|[^\w*])`)
	reStrike   = regexp.MustCompile(`~~([^~\n]+?)~~`)
)

// Mrkdwn converts a model's Markdown to Slack mrkdwn: bold,
// italics, strike-through, links, headings, lists, rules, code and tables.
// The text is neutralised first ([safetext.Text]: controls shown,
// invisible characters removed) and everything escaped, so nothing in it
// can ping or inject links other than the Markdown links it contains, and
// a link shows where it goes (see [linkMrkdwn]).
func Mrkdwn(md string) string {
	md = safetext.Text(md)
	lines := strings.Split(md, "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		// Fenced code: copied as is, escaped, without the language tag.
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence := trimmed[:3]
			var code []string
			j := i + 1
			for ; j < len(lines); j++ {
				if strings.HasPrefix(strings.TrimSpace(lines[j]), fence) {
					break
				}
				code = append(code, lines[j])
			}
			out = append(out, codeBlock(strings.Join(code, "\n")))
			i = j
			continue
		}
		// Tables: shown as a code block so their columns line up.
		if strings.HasPrefix(trimmed, "|") && i+1 < len(lines) && reTableSep.MatchString(lines[i+1]) {
			var rows []string
			j := i
			for ; j < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[j]), "|"); j++ {
				if j == i+1 {
					continue
				}
				rows = append(rows, lines[j])
			}
			out = append(out, codeBlock(alignTable(rows)))
			i = j - 1
			continue
		}
		switch {
		case reRule.MatchString(line) && trimmed != "":
			out = append(out, "──────────")
		case reHeading.MatchString(line):
			out = append(out, "*"+inline(reHeading.FindStringSubmatch(line)[1])+"*")
		case reBullet.MatchString(line):
			m := reBullet.FindStringSubmatch(line)
			out = append(out, m[1]+"• "+inline(m[2]))
		case strings.HasPrefix(trimmed, ">"):
			out = append(out, "> "+inline(strings.TrimSpace(strings.TrimPrefix(trimmed, ">"))))
		default:
			out = append(out, inline(line))
		}
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// inline converts one line's inline Markdown; code spans are kept apart.
func inline(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "`")
		if i < 0 {
			b.WriteString(inlineText(s))
			break
		}
		j := strings.Index(s[i+1:], "`")
		if j < 0 {
			b.WriteString(inlineText(s))
			break
		}
		b.WriteString(inlineText(s[:i]))
		b.WriteString("`" + Escape(s[i+1:i+1+j]) + "`")
		s = s[i+2+j:]
	}
	return b.String()
}

func inlineText(s string) string {
	if s == "" {
		return ""
	}
	// Links first, from the unescaped text, with placeholders so the
	// escaping and emphasis passes leave them alone.
	var links []string
	s = reLink.ReplaceAllStringFunc(s, func(m string) string {
		sub := reLink.FindStringSubmatch(m)
		links = append(links, linkMrkdwn(sub[1], sub[2]))
		return fmt.Sprintf("\x00%d\x00", len(links)-1)
	})
	s = Escape(s)
	s = reAutoLink.ReplaceAllString(s, "<$1>")
	s = reBold.ReplaceAllStringFunc(s, func(m string) string {
		sub := reBold.FindStringSubmatch(m)
		return "\x01" + sub[1] + sub[2] + "\x01"
	})
	s = reItalic.ReplaceAllString(s, "${1}_${2}_${3}")
	s = reStrike.ReplaceAllString(s, "~$1~")
	s = strings.ReplaceAll(s, "\x01", "*")
	for i, l := range links {
		s = strings.Replace(s, fmt.Sprintf("\x00%d\x00", i), l, 1)
	}
	return s
}

// linkMrkdwn returns the mrkdwn link for the Markdown link [text](target).
// Slack shows a link's text, not where it goes, so text that names a
// place would let a link read as one address and go to another
// ([https://bank.example/login](https://evil.example/x)). When the text
// holds a URL, a www. name or a bare domain (any word of it) whose host
// is not the target's (compared without www., case or a trailing dot, in
// their ASCII form, so a look-alike in another script or in punycode
// differs from the name it imitates), or names a place at all while the
// target's host is an internationalised one (whose letters a reader
// cannot tell from others), the link shows the target itself, its host in
// ASCII (xn--…), instead of the text. An e-mail address in the text is
// held to a mailto: target's address the same way.
func linkMrkdwn(text, target string) string {
	text = strings.NewReplacer("|", "¦", "*", "", "_", "").Replace(text)
	if shown, honest := linkTarget(text, target); !honest {
		return "<" + shown + ">"
	}
	return "<" + target + "|" + Escape(text) + ">"
}

// linkTarget reports whether text names no place other than target, and
// the target as it should be shown when it does.
func linkTarget(text, target string) (string, bool) {
	u, err := url.Parse(target)
	if err != nil {
		return target, false
	}
	if u.Scheme == "mailto" {
		_, domain, _ := strings.Cut(u.Opaque, "@")
		for _, w := range words(text) {
			if at := strings.LastIndexByte(w, '@'); at >= 0 {
				if namedHost(w[at+1:]) != "" && !strings.EqualFold(strings.TrimPrefix(w, "mailto:"), u.Opaque) {
					return target, false
				}
			} else if h := namedHost(w); h != "" && h != bareHost(domain) {
				return target, false
			}
		}
		return target, true
	}
	host, err := idna.Lookup.ToASCII(u.Hostname())
	if err != nil {
		return target, false
	}
	shown := target
	// A user name before the host ("https://bank.example@evil.example")
	// reads as a host: the link goes to the same place without it.
	if idn := !strings.EqualFold(host, u.Hostname()) || strings.Contains(host, "xn--"); idn || u.User != nil {
		if idn {
			if u.Port() != "" {
				host += ":" + u.Port()
			}
			u.Host = host
		}
		u.User = nil
		shown = u.String()
	}
	for _, w := range words(text) {
		h := namedHost(w)
		if h == "" {
			continue
		}
		if h != bareHost(u.Hostname()) || shown != target {
			return shown, false
		}
	}
	return target, true
}

// words splits text at spaces and trims the punctuation around each word.
func words(text string) []string {
	var out []string
	for _, w := range strings.Fields(text) {
		if w = strings.Trim(w, "()[]{}<>\"'`,;:!?.«»“”‘’¦"); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// namedHost returns the host a word names, in its ASCII form and without
// www. (see bareHost), or "" if it names none: a URL ("https://…",
// "ftp://…"), a name starting with www., a bare domain, with or without
// a port and a path ("bank.example", "bank.example/login"), or an e-mail
// address's domain: labels of letters, digits and hyphens, the last of
// letters (or punycode).
func namedHost(w string) string {
	scheme := false
	if i := strings.Index(w, "://"); i > 0 {
		w, scheme = w[i+3:], true
	}
	if i := strings.IndexAny(w, "/?#"); i >= 0 {
		w = w[:i]
	}
	if i := strings.LastIndexByte(w, '@'); i >= 0 {
		w = w[i+1:] // a user name, or an e-mail address: its domain
	}
	if scheme && net.ParseIP(strings.Trim(w, "[]")) != nil {
		return w
	}
	if h, port, ok := strings.Cut(w, ":"); ok && port != "" && strings.Trim(port, "0123456789") == "" {
		w = h
	}
	h, err := idna.Lookup.ToASCII(w)
	if err != nil || !strings.Contains(h, ".") {
		return ""
	}
	h = bareHost(h)
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" || strings.Trim(l, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			return ""
		}
	}
	if tld := labels[len(labels)-1]; !strings.HasPrefix(tld, "xn--") && (len(tld) < 2 || strings.Trim(tld, "abcdefghijklmnopqrstuvwxyz") != "") {
		return ""
	}
	if len(labels) < 2 && !scheme {
		return ""
	}
	return h
}

// bareHost is host in lower case without a trailing dot or a leading www.
func bareHost(host string) string {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if h, err := idna.Lookup.ToASCII(host); err == nil {
		host = h
	}
	return strings.TrimPrefix(host, "www.")
}

// alignTable lays out Markdown table rows in aligned columns.
func alignTable(rows []string) string {
	var cells [][]string
	var widths []int
	for _, r := range rows {
		r = strings.TrimSpace(r)
		r = strings.TrimPrefix(r, "|")
		r = strings.TrimSuffix(r, "|")
		var row []string
		for k, c := range strings.Split(r, "|") {
			c = strings.TrimSpace(strings.ReplaceAll(c, "**", ""))
			row = append(row, c)
			if k >= len(widths) {
				widths = append(widths, 0)
			}
			widths[k] = max(widths[k], utf8.RuneCountInString(c))
		}
		cells = append(cells, row)
	}
	var b strings.Builder
	for i, row := range cells {
		for k, c := range row {
			if k > 0 {
				b.WriteString("  ")
			}
			b.WriteString(c)
			if k < len(row)-1 {
				b.WriteString(strings.Repeat(" ", widths[k]-utf8.RuneCountInString(c)))
			}
		}
		b.WriteString("\n")
		if i == 0 && len(cells) > 1 {
			total := 0
			for _, w := range widths {
				total += w + 2
			}
			b.WriteString(strings.Repeat("─", max(total-2, 1)) + "\n")
		}
	}
	return b.String()
}

// SplitMrkdwn cuts mrkdwn into parts of at most n characters, at line
// breaks where it can, closing and reopening code blocks that span a cut.
func SplitMrkdwn(s string, n int) []string {
	var parts []string
	var cur strings.Builder
	inCode := false
	flush := func() {
		p := cur.String()
		if inCode {
			p += "\n```"
		}
		if strings.TrimSpace(p) != "" {
			parts = append(parts, strings.TrimRight(p, "\n"))
		}
		cur.Reset()
		if inCode {
			cur.WriteString("```\n")
		}
	}
	for _, line := range strings.SplitAfter(s, "\n") {
		for utf8.RuneCountInString(line) > n-8 { // a single line too long
			head, rest := CutRunes(line, n-8)
			// Never split an entity (&amp; &lt; &gt;) across two parts.
			if i := strings.LastIndexByte(head, '&'); i >= 0 && i > len(head)-len("&amp;") && !strings.Contains(head[i:], ";") {
				head, rest = head[:i], head[i:]+rest
			}
			if cur.Len() > 0 {
				flush()
			}
			cur.WriteString(head)
			flush()
			line = rest
		}
		if utf8.RuneCountInString(cur.String())+utf8.RuneCountInString(line)+4 > n {
			flush()
		}
		cur.WriteString(line)
		if strings.Count(line, "```")%2 == 1 {
			inCode = !inCode
		}
	}
	inCode = false
	flush()
	return parts
}

// CutRunes splits s after n runes.
func CutRunes(s string, n int) (string, string) {
	if n <= 0 {
		return "", s
	}
	i := 0
	for k := range s {
		if i == n {
			return s[:k], s[k:]
		}
		i++
	}
	return s, ""
}

// lastRunes returns the last n runes of s.
func lastRunes(s string, n int) string {
	c := utf8.RuneCountInString(s)
	if c <= n {
		return s
	}
	_, tail := CutRunes(s, c-n)
	return tail
}

// Truncate shortens s to n runes, adding an ellipsis when it cut.
func Truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	head, _ := CutRunes(s, max(n-1, 0))
	return head + "…"
}

// Thousands formats n with thousands separators.
func Thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
