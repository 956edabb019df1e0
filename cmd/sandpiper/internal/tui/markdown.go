package tui

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/glamour"
	"github.com/charmbracelet/glamour/ansi"
	"github.com/charmbracelet/glamour/styles"
	xansi "github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// markdown renders the model's Markdown for the terminal, at one width,
// through glamour (and chroma, for code). The text is neutralised first
// ([cleanMarkdown]) and the output filtered after ([onlySGR]), so the only
// escape sequences that reach the terminal are glamour's own colours.
type markdown struct {
	width int
	r     *glamour.TermRenderer

	// For tables narrower than width, which glamour would stretch to it:
	// renderers at their own widths, made as needed.
	profile termenv.Profile
	config  ansi.StyleConfig
	narrow  map[int]*markdown
}

// newMarkdown returns a renderer wrapping text at width columns. A nil
// config takes glamour's dark style.
func newMarkdown(width int, profile termenv.Profile, config ansi.StyleConfig) *markdown {
	r, err := glamour.NewTermRenderer(
		glamour.WithStyles(config),
		glamour.WithColorProfile(profile),
		glamour.WithWordWrap(width),
	)
	if err != nil {
		// Only a bad style option fails, and ours are fixed.
		panic("tui: glamour: " + err.Error())
	}
	return &markdown{width: width, r: r, profile: profile, config: config}
}

// codeWrap is the width given to the renderer of a card's code: wide
// enough that glamour does not wrap it; the card does.
const codeWrap = 1000

// answerStyle is glamour's dark or light style in the terminal's own
// foreground colour.
func answerStyle(dark bool) ansi.StyleConfig {
	c := styles.LightStyleConfig
	if dark {
		c = styles.DarkStyleConfig
	}
	c.Document.Color = nil
	// Code is shown on the terminal's background: a background behind
	// the characters alone looks ragged, in a card most of all. (Glamour
	// registers one chroma theme per process, so answers and cards share
	// it.)
	if c.CodeBlock.Chroma != nil {
		chroma := *c.CodeBlock.Chroma
		chroma.Background = ansi.StylePrimitive{}
		c.CodeBlock.Chroma = &chroma
	}
	return c
}

// codeStyle is answerStyle with no margins or blank lines around the
// document and its code blocks: for the code in a tool card.
func codeStyle(dark bool) ansi.StyleConfig {
	c := answerStyle(dark)
	zero := uint(0)
	c.Document.Margin = &zero
	c.Document.BlockPrefix, c.Document.BlockSuffix = "", ""
	c.CodeBlock.Margin = &zero
	c.CodeBlock.BlockPrefix, c.CodeBlock.BlockSuffix = "", ""
	return c
}

// render returns text rendered, without the blank lines around it and the
// spaces that pad its lines. On a rendering error, the neutralised text is
// returned as it is.
func (md *markdown) render(text string) string {
	clean := cleanMarkdown(text)
	segs := splitTables(clean)
	if len(segs) == 1 {
		return md.renderClean(clean)
	}
	// A table is rendered alone, at its own width, which glamour would
	// otherwise stretch to the whole width.
	margin := 0
	if m := md.config.Document.Margin; m != nil {
		margin = int(*m)
	}
	var parts []string
	for _, s := range segs {
		r := md
		if w := s.width + 2*margin; s.width > 0 && w < md.width {
			if r = md.narrow[w]; r == nil {
				r = newMarkdown(w, md.profile, md.config)
				if md.narrow == nil {
					md.narrow = map[int]*markdown{}
				}
				md.narrow[w] = r
			}
		}
		if out := r.renderClean(s.text); out != "" {
			parts = append(parts, out)
		}
	}
	return strings.Join(parts, "\n\n")
}

// segment is a part of a Markdown text: a table, with the width it needs
// (its widest cells, their margins and the separators), or other text
// (width 0).
type segment struct {
	text  string
	width int
}

// tableDelim matches a table's delimiter row: | --- | :-: |.
var tableDelim = regexp.MustCompile(`^ {0,3}\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$`)

// splitTables cuts Markdown text into its top-level tables and the text
// between them; fenced code is never a table.
func splitTables(s string) []segment {
	lines := strings.Split(s, "\n")
	var segs []segment
	var text []string
	fence := ""
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if t := strings.TrimLeft(l, " "); fence == "" && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")) {
			fence = t[:3]
		} else if fence != "" && strings.HasPrefix(strings.TrimLeft(l, " "), fence) {
			fence = ""
		}
		if fence != "" || i+1 >= len(lines) || !strings.Contains(l, "|") || !tableDelim.MatchString(lines[i+1]) || len(cells(l)) != len(cells(lines[i+1])) {
			text = append(text, l)
			continue
		}
		end := i + 2
		for end < len(lines) && strings.Contains(lines[end], "|") && strings.TrimSpace(lines[end]) != "" {
			end++
		}
		if len(text) > 0 {
			segs = append(segs, segment{text: strings.Join(text, "\n")})
			text = nil
		}
		widths := make([]int, len(cells(l)))
		for _, row := range append([]string{l}, lines[i+2:end]...) {
			for c, cell := range cells(row) {
				if c < len(widths) {
					widths[c] = max(widths[c], xansi.StringWidth(cell))
				}
			}
		}
		w := len(widths) - 1 // the separators
		for _, cw := range widths {
			w += cw + 2 // a cell and its margins
		}
		segs = append(segs, segment{text: strings.Join(lines[i:end], "\n"), width: w})
		i = end - 1
	}
	if len(text) > 0 || len(segs) == 0 {
		segs = append(segs, segment{text: strings.Join(text, "\n")})
	}
	return segs
}

// cells returns a table row's cells, trimmed.
func cells(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(row, "|")
	if strings.HasSuffix(row, "|") && !strings.HasSuffix(row, "\\|") {
		row = row[:len(row)-1]
	}
	parts := strings.Split(row, "|")
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
	}
	return parts
}

// code returns code, neutralised, highlighted as lang. It is rendered as
// a fenced code block with a fence longer than any run of backticks in
// it, so no line of it ends the block, and no character reference in it
// is decoded.
func (md *markdown) code(code, lang string) string {
	fence := "```"
	for strings.Contains(code, fence) {
		fence += "`"
	}
	return md.renderClean(fence + lang + "\n" + safetext.Text(code) + "\n" + fence + "\n")
}

// renderClean renders neutralised Markdown.
func (md *markdown) renderClean(clean string) string {
	out, err := md.r.Render(clean)
	if err != nil {
		out = clean
	}
	return trimBlock(onlySGR(out))
}

// numericRef matches an HTML numeric character reference, which Markdown
// decodes: "&#27;" becomes an ESC.
var numericRef = regexp.MustCompile(`&#(?:[0-9]{1,8}|[xX][0-9a-fA-F]{1,7});`)

// cleanMarkdown neutralises text ([safetext.Text]) and replaces each
// numeric character reference to a character safetext would not show
// (ESC, BEL, a C1 control, a bidi override) by that character's visible
// stand-in, so that decoding the Markdown cannot produce it either.
func cleanMarkdown(s string) string {
	s = safetext.Text(s)
	if !strings.Contains(s, "&#") {
		return s
	}
	return numericRef.ReplaceAllStringFunc(s, func(ref string) string {
		digits, base := ref[2:len(ref)-1], 10
		if digits[0] == 'x' || digits[0] == 'X' {
			digits, base = digits[1:], 16
		}
		n, err := strconv.ParseUint(digits, base, 32)
		if err != nil || n > utf8.MaxRune {
			return ref // the Markdown parser makes it U+FFFD
		}
		c := string(rune(n))
		if n == 0 || !utf8.ValidString(c) {
			return ref
		}
		if safe := safetext.Line(c); safe != c && c != "\n" && c != "\t" {
			return safe
		}
		return ref
	})
}

// onlySGR returns s with every escape sequence other than SGR (colours
// and text attributes: ESC [ params m) shown as text, and every other
// control neutralised ([safetext.Text]).
func onlySGR(s string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '\x1b')
		if i < 0 {
			b.WriteString(safetext.Text(s))
			return b.String()
		}
		b.WriteString(safetext.Text(s[:i]))
		s = s[i:]
		n := sgrLen(s)
		if n == 0 {
			b.WriteString("␛")
			s = s[1:]
			continue
		}
		b.WriteString(s[:n])
		s = s[n:]
	}
}

// sgrLen returns the length of the SGR sequence s starts with, or 0.
func sgrLen(s string) int {
	if len(s) < 3 || s[0] != '\x1b' || s[1] != '[' {
		return 0
	}
	for i := 2; i < len(s) && i < 64; i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9', c == ';', c == ':':
		case c == 'm':
			return i + 1
		default:
			return 0
		}
	}
	return 0
}

// trimBlock drops the blank lines around s and the spaces at the end of
// its lines (also those before a trailing reset sequence).
func trimBlock(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = trimRightSpace(l)
	}
	for len(lines) > 0 && blank(lines[0]) {
		lines = lines[1:]
	}
	for len(lines) > 0 && blank(lines[len(lines)-1]) {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n")
}

// trimRightSpace drops the spaces at the end of a line, also when they
// sit among SGR sequences.
func trimRightSpace(l string) string {
	end := len(l)
	cut := end // l[cut:] is spaces and SGR sequences
	for end > 0 {
		switch {
		case l[end-1] == ' ':
			end--
			cut = end
		case l[end-1] == 'm':
			j := strings.LastIndexByte(l[:end], '\x1b')
			if j < 0 || sgrLen(l[j:]) != end-j {
				return l[:cut] + sgrTail(l[cut:])
			}
			end = j
		default:
			return l[:cut] + sgrTail(l[cut:])
		}
	}
	return sgrTail(l[cut:])
}

// sgrTail returns the SGR sequences of s (spaces and SGR sequences only),
// without the spaces: a style that ends after the dropped spaces still
// ends.
func sgrTail(s string) string {
	if strings.IndexByte(s, '\x1b') < 0 {
		return ""
	}
	return strings.ReplaceAll(s, " ", "")
}

// blank reports whether a rendered line shows nothing.
func blank(l string) bool {
	return strings.TrimSpace(stripSGR(l)) == ""
}

// stripSGR removes SGR sequences.
func stripSGR(s string) string {
	if strings.IndexByte(s, '\x1b') < 0 {
		return s
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '\x1b')
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		n := max(sgrLen(s[i:]), 1)
		s = s[i+n:]
	}
}

// completeBlocks returns the length of the longest prefix of s, streamed
// Markdown, made of whole blocks that later text cannot change: it ends
// before a line that starts a new block after a blank line, outside a
// fenced code block, and is neither indented nor a list item (either may
// continue a list). The rest is still being written.
func completeBlocks(s string) int {
	cut := 0
	var fence string // the open code fence, if any
	prevBlank := false
	for i := 0; i < len(s); {
		end := strings.IndexByte(s[i:], '\n')
		if end < 0 {
			// The last line is not finished, but its start may be enough.
			// (A list item may yet follow, so a digit, -, * or + is not.)
			if prevBlank && fence == "" && len(s) > i && !strings.ContainsRune(" \t-*+0123456789", rune(s[i])) {
				cut = i
			}
			break
		}
		line := s[i : i+end]
		if fence == "" && prevBlank && line != "" && line[0] != ' ' && line[0] != '\t' && !listItem(line) && strings.TrimSpace(line) != "" {
			cut = i
		}
		t := strings.TrimLeft(line, " ")
		switch {
		case fence == "" && len(line)-len(t) <= 3 && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")):
			fence = t[:fenceLen(t)]
		case fence != "" && len(line)-len(t) <= 3 && strings.HasPrefix(t, fence) && strings.TrimSpace(t[fenceLen(t):]) == "":
			fence = ""
		}
		prevBlank = strings.TrimSpace(line) == ""
		i += end + 1
	}
	return cut
}

// listItem reports whether line starts a list item: after a blank line,
// it may continue the list above, which must then be rendered with it.
func listItem(line string) bool {
	switch {
	case strings.HasPrefix(line, "- "), strings.HasPrefix(line, "* "), strings.HasPrefix(line, "+ "),
		line == "-", line == "*", line == "+":
		return true
	}
	digits := 0
	for digits < len(line) && digits < 10 && line[digits] >= '0' && line[digits] <= '9' {
		digits++
	}
	if digits == 0 || digits == len(line) || (line[digits] != '.' && line[digits] != ')') {
		return false
	}
	return digits+1 == len(line) || line[digits+1] == ' '
}

// fenceLen returns the length of the run of t's first character.
func fenceLen(t string) int {
	n := 0
	for n < len(t) && t[n] == t[0] {
		n++
	}
	return n
}
