package render

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// MetaQuery marks a query card: a runSQL call, with what a restarted bot
// needs to remember it.
const MetaQuery = "sandpiper_query"

// The outcomes of a query ([agent.Query.Outcome]), as package datasource
// counts them.
const (
	queryOK          = "ok"
	queryTruncated   = "truncated"
	queryFailed      = "failed"
	queryTimeout     = "timeout"
	queryUnavailable = "unavailable"
)

// QueryCard is one runSQL call as shown in a thread, beside the tool
// cards: the source, the SQL, and what came back (the row count, the
// duration, the first rows as a table, where the whole result was saved)
// or why nothing did. A query the database refused is shown as a result:
// the model was told, and usually tries again.
type QueryCard struct {
	N          int    // the query's number within the answer, from 1
	QuestionTS string // the ts of the question the query answers
	Source     string // as the model asked for it
	SQL        string
	Running    bool
	// Query is what the database did; nil while running, and when the
	// query never reached a database (Err says why).
	Query *agent.Query
	// Err is why the call did nothing: bad input, a source not granted
	// here, the answer stopped.
	Err      error
	Duration time.Duration
	// Read is the result as the model read it, kept in the card's
	// metadata for follow-ups after a restart.
	Read  string
	Debug bool // the channel has debug on
	// Stop is the value of the Stop button a running card shows; ""
	// shows none. StoppedBy is the user who stopped the answer during
	// the query.
	Stop      string
	StoppedBy string
}

func (c *QueryCard) sqlFile() string { return fmt.Sprintf("query-%d.sql", c.N) }

// source is the source's name, made safe to show in code spans.
func (c *QueryCard) source() string {
	name := c.Source
	if c.Query != nil && c.Query.Source != "" {
		name = c.Query.Source
	}
	return "`" + Escape(strings.ReplaceAll(Truncate(safetext.Line(name), 60), "`", "'")) + "`"
}

// heading is the card's first words, their emoji, and what joins them
// to the source's name.
func (c *QueryCard) heading() (emoji, words, join string) {
	q := c.Query
	switch {
	case c.Running:
		return ":hourglass_flowing_sand:", "Querying", " "
	case c.StoppedBy != "":
		return ":octagonal_sign:", "Stopped querying", " "
	case errors.Is(c.Err, ErrInterrupted):
		return ":leftwards_arrow_with_hook:", "Interrupted querying", " "
	case q == nil:
		return ":warning:", "Query not run", " on "
	case q.Outcome == queryOK:
		return ":white_check_mark:", "Queried", " "
	case q.Outcome == queryTruncated:
		return ":scissors:", "Queried", " "
	case q.Outcome == queryFailed:
		return ":x:", "Query failed", " on "
	case q.Outcome == queryTimeout:
		return ":stopwatch:", "Query timed out", " on "
	case q.Outcome == queryUnavailable:
		return ":warning:", "Could not reach", " "
	}
	return ":warning:", "Query " + Escape(safetext.Line(q.Outcome)), " on "
}

// rows says how many rows came back: "1 row", "1,234 rows".
func rows(n int64) string {
	if n == 1 {
		return "1 row"
	}
	return Thousands(n) + " rows"
}

// status is the card's first line.
func (c *QueryCard) status() string {
	emoji, words, join := c.heading()
	s := fmt.Sprintf("%s *%s*%s%s (query %d)", emoji, words, join, c.source(), c.N)
	q := c.Query
	switch {
	case c.Running:
		return s + "…"
	case c.StoppedBy != "":
		return fmt.Sprintf("%s by %s after %s. Nothing more was run or asked of the model.", s, UserMention(c.StoppedBy), Duration(c.duration()))
	case errors.Is(c.Err, ErrInterrupted):
		return s + ": the bot running it stopped, and the question was picked up again."
	case q == nil:
		return s + ". The model was told why."
	case q.Outcome == queryOK:
		return fmt.Sprintf("%s · %s · %s", s, rows(q.Rows), Duration(c.duration()))
	case q.Outcome == queryTruncated:
		return fmt.Sprintf("%s · %s, cut: %s · %s", s, rows(q.Rows), Escape(safetext.Line(q.Truncated)), Duration(c.duration()))
	}
	return fmt.Sprintf("%s · %s · the model was told why", s, Duration(c.duration()))
}

func (c *QueryCard) duration() time.Duration {
	if c.Query != nil && c.Query.Duration > 0 {
		return c.Query.Duration
	}
	return c.Duration
}

// Fallback is the card's notification text.
func (c *QueryCard) Fallback() string {
	_, words, join := c.heading()
	s := fmt.Sprintf("%s%s%s (query %d)", words, join, Escape(Truncate(safetext.Line(c.Source), 60)), c.N)
	switch q := c.Query; {
	case c.Running:
		return s + "…"
	case q != nil && (q.Outcome == queryOK || q.Outcome == queryTruncated):
		return s + ", " + rows(q.Rows)
	}
	return s
}

// Blocks returns the card's blocks and the files to attach for what did
// not fit (the SQL when it is long). Everything the model or the
// database wrote (the SQL, column names, cells, errors) is neutralised
// with [safetext] and escaped.
func (c *QueryCard) Blocks() ([]slack.Block, []Attachment) {
	var blocks []slack.Block
	var files []Attachment
	var notes []string
	section := func(s string) {
		blocks = append(blocks, slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, s, false, false), nil, nil))
	}
	blocks = append(blocks, ContextBlock(c.status()))

	blocks = append(blocks, sourceSection(safetext.Text(c.SQL), "SQL", "the whole statement", Attachment{Name: c.sqlFile(), Title: fmt.Sprintf("SQL of query %d", c.N)}, c.Running, &notes, &files))

	q := c.Query
	switch {
	case c.Running || c.StoppedBy != "":
	case c.Err != nil && !errors.Is(c.Err, ErrInterrupted):
		section("*Why*\n" + codeBlock(Truncate(safetext.Text(c.Err.Error()), 500)))
	case q == nil:
	case q.Err != "":
		section("*Why*\n" + codeBlock(Truncate(safetext.Text(q.Err), 800)))
	default:
		blocks = append(blocks, c.preview()...)
	}
	if q != nil && !c.Running && c.Debug {
		notes = append(notes, c.debugLine())
	}
	if len(notes) > 0 {
		var els []slack.MixedElement
		for _, n := range notes {
			els = append(els, slack.NewTextBlockObject(slack.MarkdownType, n, false, false))
		}
		blocks = append(blocks, slack.NewContextBlock("", els...))
	}
	if c.Running {
		if b := stopButton(c.Stop); b != nil {
			blocks = append(blocks, b)
		}
	}
	return blocks, files
}

// Plain is the card reduced to its status line, for when Slack refused
// the full one: it says why, and the SQL is attached.
func (c *QueryCard) Plain(why string) ([]slack.Block, []Attachment) {
	note := fmt.Sprintf(":warning: Slack refused to show this card (%s); the SQL is attached.", Escape(Truncate(safetext.Line(why), 200)))
	blocks := []slack.Block{ContextBlock(c.status()), slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, note, false, false), nil, nil)}
	if c.Running {
		if b := stopButton(c.Stop); b != nil {
			blocks = append(blocks, b)
		}
	}
	return blocks, []Attachment{{Name: c.sqlFile(), Title: fmt.Sprintf("SQL of query %d", c.N), Content: safetext.Text(c.SQL)}}
}

// preview is the result's first rows as a data_table (or a word when
// there are none), and a line saying how much it shows and where the
// whole result is.
func (c *QueryCard) preview() []slack.Block {
	q := c.Query
	var out []slack.Block
	var parts []string
	header := make([]string, len(q.Columns))
	for i, col := range q.Columns {
		header[i] = col.Name
	}
	t, ok := newTable(fmt.Sprintf("%s, query %d", c.Source, c.N), header, q.Preview[:min(len(q.Preview), queryCardRows)], int(min(q.Rows, 1<<31)))
	switch {
	case len(q.Columns) == 0:
		parts = append(parts, "_The statement returned no columns._")
	case q.Rows == 0:
		parts = append(parts, "_No rows._")
	case ok:
		out = append(out, t.dataTable(t.Name))
		if int64(len(t.Rows)) < q.Rows {
			parts = append(parts, fmt.Sprintf("first %s of %s", Thousands(int64(len(t.Rows))), rows(q.Rows)))
		}
		if len(t.Header) < t.TotalCols {
			parts = append(parts, fmt.Sprintf("first %d of %d columns", len(t.Header), t.TotalCols))
		}
		if t.CellsCut {
			parts = append(parts, fmt.Sprintf("long cells cut to %d characters", tableCellChars))
		}
	}
	if q.File != "" {
		name := Escape(strings.ReplaceAll(Truncate(safetext.Line(path.Join(sandbox.WorkDir, q.File)), 160), "`", "'"))
		parts = append(parts, fmt.Sprintf("the whole result is saved as `%s` (%s) for the next runs", name, sandbox.FormatSize(q.FileSize)))
	}
	if len(parts) > 0 {
		out = append(out, ContextBlock(":bar_chart: "+capital(strings.Join(parts, " · "))))
	}
	return out
}

// debugLine gives the engine, the outcome and the result's columns and
// types.
func (c *QueryCard) debugLine() string {
	q := c.Query
	parts := []string{Escape(safetext.Line(q.Engine)), "outcome " + Escape(safetext.Line(q.Outcome)), Duration(c.duration())}
	if len(q.Columns) > 0 {
		var cols []string
		for i, col := range q.Columns {
			if i == queryDebugColumns {
				cols = append(cols, fmt.Sprintf("and %d more", len(q.Columns)-i))
				break
			}
			cols = append(cols, Escape(Truncate(safetext.Line(col.Name), 40))+" "+Escape(Truncate(safetext.Line(col.Type), 30)))
		}
		parts = append(parts, "columns: "+strings.Join(cols, ", "))
	}
	return ":lady_beetle: " + strings.Join(parts, " · ")
}

// Metadata is what a restarted bot needs to remember the query: its
// source and SQL, and the result as the model read it.
func (c *QueryCard) Metadata() slack.SlackMetadata {
	p := metadata(map[string]any{"query": c.N, "source": Truncate(c.Source, 100), "sql": Truncate(c.SQL, MetadataTextChars)}, c.QuestionTS, c.Running, func() string { return safetext.Text(c.Read) })
	if q := c.Query; !c.Running && q != nil {
		p["outcome"], p["rows"] = q.Outcome, q.Rows
		if q.File != "" {
			p["file"] = q.File
		}
	}
	return slack.SlackMetadata{EventType: MetaQuery, EventPayload: p}
}
