package answer

import (
	"context"
	"strings"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/agent/datasource"
	"github.com/sandpiper-bot/sandpiper/bot/internal/slackapi"
	"github.com/sandpiper-bot/sandpiper/bot/render"
	"github.com/sandpiper-bot/sandpiper/bot/thread"
)

// Query is one runSQL call of an answer, for its footers (the number
// check): the source, the SQL and what came back.
type Query struct {
	Source, SQL string
	// Result is the tool result the model read (the columns, the row
	// count, the first rows, where the result was saved, or the error).
	Result string
	// Rows are the first rows the card shows, each cell as text.
	Rows [][]string
}

// postedQuery is a query card in the thread.
type postedQuery struct {
	render.QueryCard
	ts string
}

// queryStarted posts a running query card for a runSQL call: the source
// and the SQL, before the database answers.
func (p *cardPoster) queryStarted(ctx context.Context, e agent.ToolCallEvent) {
	in, _ := datasource.DecodeQuery(e.Call.Input) // bad input: the card says why when the call ends
	p.mu.Lock()
	c := p.queryCard(e.Call.ID)
	c.Source, c.SQL, c.Running = in.Source, in.SQL, true
	p.mu.Unlock()
	p.status.set("is querying " + in.Source + "…")

	ctx, cancel := slackapi.Context(ctx)
	defer cancel()
	p.post(ctx, &c.QueryCard, &c.ts)
}

// queryFinished shows how a runSQL call ended on its card: the rows, or
// why there are none (a query the database refused is a result, shown
// as such), and remembers the query for follow-ups.
func (p *cardPoster) queryFinished(ctx context.Context, e agent.ToolResultEvent) {
	by := stoppedBy(ctx)
	p.mu.Lock()
	c := p.queryCard(e.Call.ID)
	c.Running, c.Query, c.Err, c.Duration, c.StoppedBy, c.Read = false, e.Query, e.Err, e.Duration, by, e.Result.Content
	if q := e.Query; q != nil && c.Source == "" {
		c.Source, c.SQL = q.Source, q.SQL
	}
	output := render.Truncate(e.Result.Content, render.RunOutputChars)
	if by != "" {
		output = "[stopped by the user before it finished]"
	}
	p.runs = append(p.runs, thread.Run{Source: c.Source, SQL: c.SQL, Output: output})
	shown := Query{Source: c.Source, SQL: c.SQL, Result: e.Result.Content}
	if e.Query != nil {
		shown.Rows = e.Query.Preview
	}
	p.queries = append(p.queries, shown)
	p.mu.Unlock()
	p.status.set("is thinking…")

	if p.debug {
		outcome := "not run"
		if e.Query != nil {
			outcome = e.Query.Outcome
		}
		p.log.Info("query", "query", c.N, "source", c.Source, "sql", c.SQL, "outcome", outcome, "duration", e.Duration)
	}
	ctx, cancel := slackapi.Context(ctx)
	defer cancel()
	p.post(ctx, &c.QueryCard, &c.ts)
}

// queryCard returns the query card of the call id, new if need be; p.mu
// is held.
func (p *cardPoster) queryCard(id string) *postedQuery {
	if c, ok := p.queryCards[id]; ok {
		return c
	}
	if p.queryCards == nil {
		p.queryCards = map[string]*postedQuery{}
	}
	c := &postedQuery{QueryCard: render.QueryCard{N: len(p.queryCards) + 1, QuestionTS: p.m.TS, Debug: p.debug, Stop: p.stop}}
	p.queryCards[id] = c
	p.queryOrder = append(p.queryOrder, id)
	return c
}

// queryText is a query's result as the number check reads it: what the
// model read, and the rows the card shows.
func queryText(q Query) string {
	var b strings.Builder
	b.WriteString(q.Result)
	for _, r := range q.Rows {
		b.WriteString("\n" + strings.Join(r, "\t"))
	}
	return b.String()
}
