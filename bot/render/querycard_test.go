package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
)

// sales is a query's result: three regions and their totals, with a
// NULL.
func sales() *agent.Query {
	return &agent.Query{Source: "warehouse", Engine: "PostgreSQL", SQL: "SELECT region, sum(amount) AS total FROM orders GROUP BY region",
		Columns: []agent.QueryColumn{{Name: "region", Type: "text"}, {Name: "total", Type: "numeric"}},
		Preview: [][]string{{"north", "1234567.50"}, {"south", "0.4375"}, {agent.QueryNull, "12"}},
		Rows:    3, File: "sales_by_region.csv", FileSize: 71, Outcome: "ok", Duration: 42 * time.Millisecond}
}

// numbered is a result of n rows (the preview holding the first 20).
func numbered(n int64, outcome, truncated string) *agent.Query {
	q := &agent.Query{Source: "warehouse", Engine: "MySQL", SQL: "SELECT n, n * n AS square FROM numbers",
		Columns: []agent.QueryColumn{{Name: "n", Type: "BIGINT"}, {Name: "square", Type: "BIGINT"}},
		Rows:    n, Truncated: truncated, File: "squares.csv", FileSize: 1 << 20, Outcome: outcome, Duration: 2300 * time.Millisecond}
	for i := int64(1); i <= min(n, 20); i++ {
		q.Preview = append(q.Preview, []string{fmt.Sprint(i), fmt.Sprint(i * i)})
	}
	return q
}

func wide() *agent.Query {
	q := &agent.Query{Source: "warehouse", Engine: "SQLite", SQL: "SELECT * FROM wide", Rows: 1, Outcome: "ok", Duration: time.Millisecond}
	var row []string
	for i := range 25 {
		q.Columns = append(q.Columns, agent.QueryColumn{Name: fmt.Sprintf("c%d", i+1), Type: "INTEGER"})
		row = append(row, fmt.Sprint(i))
	}
	q.Preview = [][]string{row}
	return q
}

const hostileSQL = "SELECT '<!channel>' AS \"\x1b]52;c;cm0=\x07\", '\u202eevil' -- ```\n"

func hostileQuery() *agent.Query {
	return &agent.Query{Source: "warehouse", Engine: "PostgreSQL", SQL: hostileSQL,
		Columns: []agent.QueryColumn{{Name: "\x1b]52;c;cm0=\x07<@U1>", Type: "text\x9b"}, {Name: "ok", Type: "int"}},
		Preview: [][]string{{"<!channel> \x1b[2J\u202eexe.gnp", "1"}, {"line\nbreak\ttab\x07", "2"}},
		Rows:    2, File: "x\u202e.csv", FileSize: 10, Outcome: "ok", Duration: time.Millisecond}
}

func TestQueryCardGolden(t *testing.T) {
	const stop = "C0DATA 1700000000.000100 1700000000.000300 U0ALICE"
	failed := &agent.Query{Source: "warehouse", Engine: "PostgreSQL", SQL: "SELECT * FROM ordres", Outcome: "failed", Duration: 3 * time.Millisecond,
		Err: `the database refused the statement: ERROR: relation "ordres" does not exist (SQLSTATE 42P01). Fix the SQL and try again (describeData shows the tables and columns).`}
	for _, tc := range []struct {
		name string
		card QueryCard
	}{
		{"running", QueryCard{N: 1, Source: "warehouse", SQL: sales().SQL, Running: true, Stop: stop}},
		{"ok", QueryCard{N: 1, Source: "warehouse", SQL: sales().SQL, Query: sales()}},
		{"debug", QueryCard{N: 2, Source: "warehouse", SQL: sales().SQL, Query: sales(), Debug: true}},
		{"many_rows", QueryCard{N: 1, Source: "warehouse", SQL: numbered(12345, "ok", "").SQL, Query: numbered(12345, "ok", "")}},
		{"truncated", QueryCard{N: 1, Source: "warehouse", SQL: numbered(100000, "truncated", "").SQL, Query: numbered(100000, "truncated", "more than 100,000 rows (the limit)")}},
		{"one_row", QueryCard{N: 1, Source: "warehouse", SQL: "SELECT count(*) FROM orders", Query: &agent.Query{Source: "warehouse", Engine: "SQLite", SQL: "SELECT count(*) FROM orders",
			Columns: []agent.QueryColumn{{Name: "count(*)", Type: "INTEGER"}}, Preview: [][]string{{"3"}}, Rows: 1, File: "query_1a2b3c4d.csv", FileSize: 11, Outcome: "ok", Duration: 800 * time.Microsecond}}},
		{"no_rows", QueryCard{N: 1, Source: "warehouse", SQL: "SELECT * FROM orders WHERE false", Query: &agent.Query{Source: "warehouse", Engine: "SQLite",
			Columns: []agent.QueryColumn{{Name: "id", Type: "INTEGER"}}, File: "empty.csv", FileSize: 3, Outcome: "ok", Duration: time.Millisecond}}},
		{"wide", QueryCard{N: 1, Source: "warehouse", SQL: "SELECT * FROM wide", Query: wide()}},
		{"failed", QueryCard{N: 1, Source: "warehouse", SQL: failed.SQL, Query: failed, Read: `{"error":"…"}`}},
		{"timeout", QueryCard{N: 1, Source: "warehouse", SQL: "SELECT pg_sleep(60)", Query: &agent.Query{Source: "warehouse", Engine: "PostgreSQL", Outcome: "timeout", Duration: 30 * time.Second,
			Err: "the statement ran longer than the limit of 30s and was cancelled (the limit is 30s: make the query cheaper, e.g. aggregate, filter on indexed columns, or add a LIMIT)"}}},
		{"unavailable", QueryCard{N: 1, Source: "warehouse", SQL: "SELECT 1", Query: &agent.Query{Source: "warehouse", Engine: "PostgreSQL", Outcome: "unavailable", Duration: 5 * time.Second,
			Err: "source warehouse is unavailable: dial tcp 127.0.0.1:5432: connect: connection refused"}}},
		{"not_run", QueryCard{N: 1, Source: "secret", SQL: "SELECT 1", Err: errors.New("unknown source \"secret\"; the sources available in this conversation are: warehouse"), Duration: time.Millisecond}},
		{"stopped", QueryCard{N: 1, Source: "warehouse", SQL: "SELECT pg_sleep(60)", Stop: stop, StoppedBy: "U0ADMIN", Err: errors.New("context canceled"), Duration: 1500 * time.Millisecond}},
		{"interrupted", QueryCard{N: 1, Source: "warehouse", SQL: "SELECT pg_sleep(60)", Err: ErrInterrupted}},
		{"long_sql", QueryCard{N: 3, Source: "warehouse", SQL: "SELECT 1\n" + strings.Repeat("UNION ALL SELECT 1 -- <&>\n", 200), Query: numbered(1, "ok", "")}},
		{"hostile", QueryCard{N: 1, Source: "warehouse", SQL: hostileSQL, Query: hostileQuery(), Debug: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blocks, files := tc.card.Blocks()
			golden := map[string]any{
				"text":     tc.card.Fallback(),
				"blocks":   blocks,
				"files":    fileNames(files),
				"metadata": tc.card.Metadata(),
			}
			checkLimits(t, blocks)
			slacktest.GoldenJSON(t, filepath.Join("testdata", "querycards", tc.name+".json"), golden)
		})
	}
}

// TestQueryCardShowsResult: a finished card says, in what a reader sees,
// the source, the SQL, the row count and the duration, shows the first
// rows in a table (numbers as numbers, NULL as NULL), and names the saved
// file; a failed query shows the database's words.
func TestQueryCardShowsResult(t *testing.T) {
	c := QueryCard{N: 1, Source: "warehouse", SQL: sales().SQL, Query: sales()}
	blocks, _ := c.Blocks()
	text := visible(t, blocks)
	for _, want := range []string{"*Queried* `warehouse` (query 1) · 3 rows · 42 ms", "GROUP BY region", "/mnt/data/sales_by_region.csv", "71 bytes"} {
		if !strings.Contains(text, want) {
			t.Errorf("the card lacks %q:\n%s", want, text)
		}
	}
	var table *slack.DataTableBlock
	for _, b := range blocks {
		if tb, ok := b.(*slack.DataTableBlock); ok {
			table = tb
		}
	}
	if table == nil || len(table.Rows) != 4 {
		t.Fatalf("no table of a header and 3 rows: %+v", blocks)
	}
	raw, _ := json.Marshal(table.Rows)
	for _, want := range []string{`"text":"region"`, `"value":1234567.5,"text":"1234567.50"`, `"text":"NULL"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("the table lacks %s: %s", want, raw)
		}
	}

	f := QueryCard{N: 2, Source: "warehouse", SQL: "SELECT * FROM ordres", Query: &agent.Query{Outcome: "failed", Err: `relation "ordres" does not exist`}}
	blocks, _ = f.Blocks()
	if text := visible(t, blocks); !strings.Contains(text, "*Query failed* on `warehouse`") || !strings.Contains(text, `relation "ordres" does not exist`) {
		t.Errorf("a failed query's card:\n%s", text)
	}
}

// TestQueryCardNeutralises: nothing a reader sees of a card, its
// notification or its attachments holds a control character, a bidi
// control or a live mention, whatever the SQL and the cells hold.
func TestQueryCardNeutralises(t *testing.T) {
	for _, c := range []QueryCard{
		{N: 1, Source: "\x1b[31mwarehouse\u202e", SQL: hostileSQL, Running: true},
		{N: 1, Source: "warehouse", SQL: hostileSQL, Query: hostileQuery(), Debug: true},
		{N: 2, Source: "warehouse", SQL: strings.Repeat(hostileSQL, 300), Query: &agent.Query{Outcome: "failed", Err: "ERROR \x1b]0;pwned\x07 <!here> \u202e"}},
		{N: 3, Source: "warehouse", SQL: hostileSQL, Err: errors.New("unknown source \"\x1b[2J<!channel>\"")},
	} {
		blocks, plain := checkNeutral(t, c.N, &c)
		// Mrkdwn (not a table's raw text, nor a file) is escaped.
		for _, s := range []string{visible(t, blocks), visible(t, plain), c.Fallback()} {
			for _, live := range []string{"<!channel>", "<!here>", "<@U1>"} {
				if strings.Contains(s, live) {
					t.Errorf("card %d shows a live %s in %.200q", c.N, live, s)
				}
			}
		}
	}
}

// visible is the text of the sections and context lines of blocks.
func visible(t *testing.T, blocks []slack.Block) string {
	t.Helper()
	var b strings.Builder
	for _, bl := range blocks {
		switch bl := bl.(type) {
		case *slack.SectionBlock:
			b.WriteString(bl.Text.Text + "\n")
		case *slack.ContextBlock:
			for _, e := range bl.ContextElements.Elements {
				if tb, ok := e.(*slack.TextBlockObject); ok {
					b.WriteString(tb.Text + "\n")
				}
			}
		}
	}
	return b.String()
}
