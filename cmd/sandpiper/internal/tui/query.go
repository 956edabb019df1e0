package tui

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/agent/datasource"
	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// Query cards (here and in package chat): the rows shown, and the width
// of a cell.
const (
	QueryRows      = 10
	QueryCellChars = 24
)

// QueryTable lays out a query's first rows (at most maxRows) under its
// column names, each cell neutralised and cut to cellChars; more is how
// many rows it leaves out. It is "" for a result with no columns.
func QueryTable(q *agent.Query, maxRows, cellChars int) (table string, more int64) {
	if len(q.Columns) == 0 {
		return "", 0
	}
	header := make([]string, len(q.Columns))
	for i, c := range q.Columns {
		header[i] = c.Name
	}
	rows := append([][]string{header}, q.Preview[:min(len(q.Preview), maxRows)]...)
	var widths []int
	cells := make([][]string, len(rows))
	for r, row := range rows {
		cells[r] = make([]string, len(row))
		for i, c := range row {
			c = safetext.Line(c)
			if utf8.RuneCountInString(c) > cellChars {
				c = string([]rune(c)[:cellChars-1]) + "…"
			}
			cells[r][i] = c
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for r, row := range cells {
		for i, c := range row {
			if i > 0 {
				b.WriteString("  ")
			}
			b.WriteString(c)
			if i < len(row)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)))
			}
		}
		b.WriteString("\n")
		if r == 0 {
			for i, w := range widths {
				if i > 0 {
					b.WriteString("  ")
				}
				b.WriteString(strings.Repeat("─", w))
			}
			b.WriteString("\n")
		}
	}
	return b.String(), max(q.Rows-int64(len(rows)-1), 0)
}

// Commas writes n with thousands separators: 100,000.
func Commas(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// queryTitle is the title and body of a runSQL card's top: the source,
// and the SQL.
func queryTitle(e agent.ToolCallEvent) (title, sql string, ok bool) {
	if e.Call.Name != datasource.QueryToolName {
		return "", "", false
	}
	in, err := datasource.DecodeQuery(e.Call.Input)
	if err != nil {
		return "", "", false
	}
	return "SQL · " + safetext.Line(in.Source), in.SQL, true
}

// queryBottom writes a query's verdict, its first rows and where its
// whole result is.
func queryBottom(t theme, c *card, q *agent.Query, dur string) {
	var mark string
	switch q.Outcome {
	case datasource.OutcomeOK:
		mark = t.green.Render("✓ " + Commas(q.Rows) + " rows")
	case datasource.OutcomeTruncated:
		mark = t.yellow.Render("✓ " + Commas(q.Rows) + " rows · cut: " + safetext.Line(q.Truncated))
	default:
		mark = t.red.Render("✗ " + q.Outcome)
	}
	c.rule("├", mark+" "+t.dim.Render("· "+safetext.Line(q.Engine)+" ")+dur, "┤")
	if q.Err != "" {
		c.rows(safetext.Text(q.Err), outputRows, &t.red)
		return
	}
	if table, more := QueryTable(q, QueryRows, QueryCellChars); table != "" {
		c.rows(strings.TrimRight(table, "\n"), QueryRows+2, nil)
		if more > 0 {
			c.note(fmt.Sprintf("… %s more rows", Commas(more)))
		}
	}
	if q.File != "" {
		c.note(fmt.Sprintf("result in %s/%s (%s)", sandbox.WorkDir, safetext.Line(q.File), sandbox.FormatSize(q.FileSize)))
	}
}
