package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	xansi "github.com/charmbracelet/x/ansi"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// Card limits.
const (
	maxCardWidth = 100 // columns, borders included
	codeRows     = 200 // rows of code shown in a card
	outputRows   = 20  // rows of each output stream shown in a card
	fileRows     = 10  // files listed in a card
)

// A card frames one tool call: its code, then its status, output and
// files. The top is printed when the call starts and the rest when it
// ends, so that a long program is in the scrollback while it runs.
type card struct {
	t theme
	w int // the card's width, borders included
	b strings.Builder
}

func newCard(t theme, width int) *card {
	return &card{t: t, w: max(min(width, maxCardWidth), 20)}
}

// inner is the width of a card's content.
func (c *card) inner() int { return c.w - 4 }

// rule writes a horizontal rule with an optional title, ending in the
// given corners: "╭─ Python ───╮".
func (c *card) rule(left, title, right string) {
	line := left + "─"
	if title != "" {
		line += " " + title + " "
	}
	fill := c.w - lipgloss.Width(line) - lipgloss.Width(right)
	if fill < 1 {
		title = xansi.Truncate(title, max(c.w-8, 1), "…")
		line = left + "─ " + title + " "
		fill = max(c.w-lipgloss.Width(line)-lipgloss.Width(right), 1)
	}
	c.b.WriteString(c.t.border.Render(left+"─") + strings.TrimPrefix(line, left+"─") + c.t.border.Render(strings.Repeat("─", fill)+right) + "\n")
}

// row writes one row of content, which must fit: "│ text   │".
func (c *card) row(s string) {
	pad := max(c.inner()-lipgloss.Width(s), 0)
	c.b.WriteString(c.t.border.Render("│") + " " + s + strings.Repeat(" ", pad) + " " + c.t.border.Render("│") + "\n")
}

// rows writes text, wrapped to the card, at most max rows of it, in style
// (nil for none); it returns how many lines of text were left out. The
// text must be safe to show.
func (c *card) rows(text string, maxRows int, style *lipgloss.Style) (omitted int) {
	lines := strings.Split(text, "\n")
	shown := 0
	for i, l := range lines {
		// At spaces where it can, else mid-word.
		wrapped := strings.Split(xansi.Wrap(l, c.inner(), ""), "\n")
		for _, w := range wrapped {
			if shown == maxRows {
				return len(lines) - i
			}
			if style != nil {
				w = style.Render(w)
			}
			c.row(w)
			shown++
		}
	}
	return 0
}

// note writes a dim row.
func (c *card) note(s string) { c.row(c.t.dim.Render(xansi.Truncate(s, c.inner(), "…"))) }

func (c *card) String() string { return strings.TrimSuffix(c.b.String(), "\n") }

// cardTop renders the top of e's card: its title and its code (or, for a
// tool other than executeCode, its input), highlighted.
func cardTop(t theme, md *markdown, width int, e agent.ToolCallEvent) string {
	c := newCard(t, width)
	title, body := "Python", e.Code
	qtitle, sql, isQuery := queryTitle(e)
	switch {
	case isQuery:
		title, body = qtitle, sql
	case e.Call.Name != agent.ExecuteCodeName:
		title = safetext.Line(e.Call.Name)
		if body == "" {
			body = string(e.Call.Input)
		}
	}
	c.rule("╭", t.bold.Render(title), "╮")
	code := strings.Trim(safetext.Text(body), "\n")
	if code == "" {
		c.note("(no code)")
		return c.String()
	}
	if e.Call.Name == agent.ExecuteCodeName && md != nil {
		code = md.code(code, "python")
	} else if isQuery && md != nil {
		code = md.code(code, "sql")
	}
	if n := c.rows(code, codeRows, nil); n > 0 {
		c.note(fmt.Sprintf("… %d more lines", n))
	}
	return c.String()
}

// cardRunning is the live row of a running card: a spinner and the time
// since the call started.
func cardRunning(t theme, width int, spin string, elapsed time.Duration) string {
	c := newCard(t, width)
	c.row(spin + " running " + t.dim.Render(formatDuration(elapsed)))
	return c.String()
}

// savedFile is what became of a file the program wrote.
type savedFile struct {
	name string // neutralised
	size int64
	path string // where it was saved; "" when not saved
	err  error
}

// cardBottom renders the rest of e's card: status, duration, output (cut
// with a note), the files saved, and the bottom border.
func cardBottom(t theme, width int, e agent.ToolResultEvent, files []savedFile) string {
	c := newCard(t, width)
	dur := t.dim.Render("· " + formatDuration(e.Duration))
	res := e.Sandbox
	switch v := sandbox.VerdictOf(res, e.Err); {
	case e.Err != nil:
		mark, style := "✗ "+v.Phrase, t.red
		switch {
		case v.Kind == sandbox.VerdictStopped:
			style = t.yellow
		case e.Call.Name != agent.ExecuteCodeName:
			mark = "✗ error" // another tool's: the verdict speaks of code
		}
		c.rule("├", style.Render(mark)+" "+dur, "┤")
		if v.Kind != sandbox.VerdictStopped {
			c.rows(safetext.Text(e.Err.Error()), outputRows, &t.red)
		}
	case e.Query != nil:
		queryBottom(t, c, e.Query, dur)
	case res == nil:
		mark := t.green.Render("✓ done")
		if e.Result.IsError {
			mark = t.red.Render("✗ error")
		}
		c.rule("├", mark+" "+dur, "┤")
		if s := strings.Trim(safetext.Text(e.Result.Content), "\n"); s != "" {
			if n := c.rows(s, outputRows, nil); n > 0 {
				c.note(fmt.Sprintf("… %d more lines", n))
			}
		}
	default:
		c.rule("├", status(t, res.Verdict())+" "+dur, "┤")
		out := strings.TrimRight(safetext.Text(string(res.Stdout)), "\n")
		errOut := strings.TrimRight(safetext.Text(string(res.Stderr)), "\n")
		if out == "" && errOut == "" {
			c.note("(no output)")
		}
		stream(c, out, res.StdoutTruncated, int64(len(res.Stdout)), res.StdoutSize, "output", nil)
		stream(c, errOut, res.StderrTruncated, int64(len(res.Stderr)), res.StderrSize, "stderr", &t.red)
		for i, f := range files {
			if i == fileRows {
				c.note(fmt.Sprintf("… %d more files", len(files)-fileRows))
				break
			}
			switch {
			case f.err != nil:
				c.rows(t.red.Render(xansi.Truncate(safetext.Line("could not save "+f.name+": "+f.err.Error()), c.inner(), "…")), 1, nil)
			case f.path != "":
				c.row(xansi.Truncate("saved "+f.path+" "+t.dim.Render("("+sandbox.FormatSize(f.size)+")"), c.inner(), "…"))
			default:
				c.row(xansi.Truncate("file "+f.name+" "+t.dim.Render("("+sandbox.FormatSize(f.size)+")"), c.inner(), "…"))
			}
		}
		for i, o := range res.FilesOmitted {
			if i == fileRows {
				c.note(fmt.Sprintf("… %d more not saved", len(res.FilesOmitted)-fileRows))
				break
			}
			c.row(t.yellow.Render(xansi.Truncate("not saved: "+safetext.Line(o), c.inner(), "…")))
		}
		if st := res.State; st != nil {
			if st.RestoreFailed != "" {
				c.row(t.yellow.Render(xansi.Truncate(safetext.Line("variables set aside: "+st.RestoreFailed), c.inner(), "…")))
			}
			if len(st.Restored) > 0 {
				c.note(safetext.Line(fmt.Sprintf("restored: %s", namesLine(st.Restored, st.RestoredCount))))
			}
			if len(st.NotRestored) > 0 {
				c.row(t.yellow.Render(xansi.Truncate(safetext.Line("not restored: "+namesLine(st.NotRestored, st.NotRestoredCount)), c.inner(), "…")))
			}
		}
	}
	c.rule("╰", "", "╯")
	return c.String()
}

// namesLine lists names on one line, saying how many more there are.
func namesLine(names []string, count int) string {
	s := strings.Join(names, ", ")
	if more := count - len(names); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// stream writes one output stream of a run into a card, with a note for
// the lines left out and for output the sandbox cut.
func stream(c *card, text string, truncated bool, kept, size int64, what string, style *lipgloss.Style) {
	if text == "" {
		return
	}
	if n := c.rows(text, outputRows, style); n > 0 {
		c.note(fmt.Sprintf("… %d more lines of %s", n, what))
	}
	if truncated {
		c.note(fmt.Sprintf("… %s cut at %s of %s", what, sandbox.FormatSize(kept), sandbox.FormatSize(size)))
	}
}

// status is a card's verdict on a sandbox run, as the sandbox says it.
func status(t theme, v sandbox.Verdict) string {
	s := safetext.Line(v.String())
	switch {
	case v.Failed():
		return t.red.Render("✗ " + s)
	case v.Note != "":
		return t.yellow.Render("✓ " + s)
	}
	return t.green.Render("✓ " + s)
}
