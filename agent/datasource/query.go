package datasource

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// Budgets of what the model reads of a result.
const (
	modelPreviewRows  = 10
	modelCellChars    = 80
	modelPreviewBytes = 6 << 10
)

// queryResult is the JSON the model reads for a query.
type queryResult struct {
	Source    string        `json:"source"`
	Error     string        `json:"error,omitempty"`
	Rows      int64         `json:"rows"`
	Columns   []columnJSON  `json:"columns,omitempty"`
	Preview   [][]*string   `json:"preview,omitempty"`
	Shown     string        `json:"shown,omitempty"`
	File      string        `json:"file,omitempty"`
	Read      string        `json:"read,omitempty"`
	Truncated string        `json:"truncated,omitempty"`
	Note      string        `json:"note,omitempty"`
	Duration  time.Duration `json:"-"`
	Millis    int64         `json:"durationMs"`
}

type columnJSON struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// Query runs one SQL statement on the named source, read-only, for the
// run in ctx ([agent.RunInfoFrom]: the source must be granted to it),
// keeps the whole result in ws as CSV (file names it, or it is named
// after the SQL), and returns what the model reads and the query for
// observers. A statement the database refuses is a failed query (in
// q.Outcome and q.Err), not an error; the error is ctx's when the run
// was stopped, or bad input.
func (s *Set) Query(ctx context.Context, ws agent.Workspace, source, sql, file string) (content string, q *agent.Query, err error) {
	sql = strings.TrimSpace(sql)
	if sql == "" {
		return "", nil, errors.New(`invalid input: "sql" is empty; send one SQL statement`)
	}
	src, err := s.granted(ctx, source)
	if err != nil {
		return "", nil, err
	}
	q = &agent.Query{Source: src.Name, Engine: src.Engine(), SQL: sql}
	res := queryResult{Source: src.Name}
	sk := newSink(s.lim)
	start := time.Now()
	err = s.usable(ctx, src)
	if err == nil {
		qctx, cancel := context.WithTimeout(ctx, s.lim.Timeout+5*time.Second) // the server's limit comes first
		err = src.eng.query(qctx, sql, s.lim, sk)
		late := qctx.Err() != nil
		cancel()
		if err != nil && ctx.Err() == nil && late {
			err = &dbError{msg: fmt.Sprintf("the statement ran longer than the limit of %s and was cancelled", s.lim.Timeout), timeout: true}
		}
	}
	q.Engine = src.Engine()
	q.Duration = time.Since(start)
	res.Duration = q.Duration
	q.Outcome = OutcomeOK
	switch {
	case err != nil && ctx.Err() != nil:
		q.Outcome, q.Err = OutcomeCanceled, "stopped before it finished"
		s.record(ctx, q)
		return "", q, ctx.Err()
	case err != nil:
		err = s.wrap(src, err)
		var db *dbError
		switch {
		case errors.As(err, &db) && db.timeout:
			q.Outcome = OutcomeTimeout
			res.Error = safetext.Line(err.Error()) + fmt.Sprintf(" (the limit is %s: make the query cheaper, e.g. aggregate, filter on indexed columns, or add a LIMIT)", s.lim.Timeout)
		case errors.As(err, &db):
			q.Outcome = OutcomeFailed
			res.Error = "the database refused the statement: " + safetext.Line(err.Error()) + ". Fix the SQL and try again (describeData shows the tables and columns)."
		default:
			q.Outcome = OutcomeUnavailable
			res.Error = fmt.Sprintf("source %s is unavailable: %s", src.Name, safetext.Line(err.Error()))
		}
		q.Err = res.Error
		s.record(ctx, q)
		return s.encode(res), q, nil
	}
	q.Rows, res.Rows = sk.rows, sk.rows
	for _, c := range sk.cols {
		q.Columns = append(q.Columns, agent.QueryColumn{Name: c.Name, Type: c.Type})
		res.Columns = append(res.Columns, columnJSON{Name: safetext.Line(c.Name), Type: safetext.Line(c.Type)})
	}
	q.Preview = sk.preview
	if sk.truncated != "" {
		q.Outcome, q.Truncated = OutcomeTruncated, sk.truncated
		res.Truncated = fmt.Sprintf("the result has %s: the file holds the first %s rows only. Aggregate or filter in SQL to get all you need.", sk.truncated, commas(sk.rows))
	}
	res.Preview, res.Shown = modelPreview(sk.preview, sk.rows)
	name := fileName(file, sql)
	switch {
	case ws == nil:
		res.Note = "the result was not saved: this conversation has no working directory; only the preview is there"
	default:
		data := sk.csv.Bytes()
		dropped, perr := ws.Put(ctx, []sandbox.File{{Name: name, Data: data}})
		if perr != nil || len(dropped) > 0 {
			res.Note = fmt.Sprintf("the result (%s of CSV) could not be saved in the working directory (over its limits): only the preview is there. Aggregate or filter in SQL for a smaller result.", sandbox.FormatSize(int64(len(data))))
			if perr != nil {
				s.log.ErrorContext(ctx, "datasource: keeping a result failed", "source", src.Name, "err", perr)
			}
		} else {
			q.File, q.FileSize = name, int64(len(data))
			res.File = path.Join(sandbox.WorkDir, name)
			res.Read = "import pandas as pd; df = " + readHint(res.File, sk.cols)
		}
	}
	s.record(ctx, q)
	return s.encode(res), q, nil
}

// granted returns the source if the run may query it.
func (s *Set) granted(ctx context.Context, name string) (*Source, error) {
	run := agent.RunInfoFrom(ctx)
	var avail []string
	for _, n := range s.Names() {
		if run.Granted(n) {
			avail = append(avail, n)
		}
	}
	src := s.Source(name)
	if src == nil || !run.Granted(name) {
		if len(avail) == 0 {
			return nil, fmt.Errorf("no data source is available in this conversation")
		}
		if name == "" {
			return nil, fmt.Errorf(`invalid input: "source" is missing; the sources are: %s`, strings.Join(avail, ", "))
		}
		return nil, fmt.Errorf("unknown source %q; the sources available in this conversation are: %s", safetext.Line(name), strings.Join(avail, ", "))
	}
	return src, nil
}

// record counts q and writes its audit line.
func (s *Set) record(ctx context.Context, q *agent.Query) {
	s.metrics.queries.WithLabelValues(q.Source, q.Outcome).Inc()
	s.metrics.seconds.WithLabelValues(q.Source).Observe(q.Duration.Seconds())
	run := agent.RunInfoFrom(ctx)
	attrs := []any{"user", run.User, "channel", run.Channel, "source", q.Source, "rows", q.Rows, "duration", q.Duration, "outcome", q.Outcome}
	if q.Truncated != "" {
		attrs = append(attrs, "truncated", q.Truncated)
	}
	if q.Err != "" {
		attrs = append(attrs, "err", q.Err)
	}
	if s.log.Enabled(ctx, slog.LevelDebug) {
		attrs = append(attrs, "sql", q.SQL)
	}
	s.log.InfoContext(ctx, "datasource: query", attrs...)
}

func (s *Set) encode(res queryResult) string {
	res.Millis = res.Duration.Milliseconds()
	b, err := json.Marshal(res)
	if err != nil {
		return `{"error":"the result could not be encoded"}`
	}
	return string(b)
}

// modelPreview is the first rows as the model reads them: at most
// modelPreviewRows, each cell cut and neutralised, within
// modelPreviewBytes in all.
func modelPreview(rows [][]string, total int64) ([][]*string, string) {
	var out [][]*string
	size := 0
	for _, r := range rows {
		if len(out) == modelPreviewRows {
			break
		}
		row := make([]*string, len(r))
		for i, c := range r {
			if c == agent.QueryNull {
				continue // null
			}
			v := safetext.Line(cut(c, modelCellChars))
			row[i] = &v
			size += len(v) + 4
		}
		if size > modelPreviewBytes && len(out) > 0 {
			break
		}
		out = append(out, row)
	}
	shown := ""
	if int64(len(out)) < total {
		shown = fmt.Sprintf("the first %d of %s rows", len(out), commas(total))
	}
	return out, shown
}

// cut shortens s to n characters, saying so.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + fmt.Sprintf("… [%d characters]", len(r))
}

var unsafeName = regexp.MustCompile(`[^a-z0-9_-]+`)

// fileName is the result's file name: the one asked for, made safe, or
// query_ and a hash of the SQL (the same SQL replaces its file).
func fileName(want, sql string) string {
	want = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(want)), ".csv")
	want = strings.Trim(unsafeName.ReplaceAllString(want, "_"), "_-")
	if len(want) > 60 {
		want = want[:60]
	}
	if want == "" {
		h := sha256.Sum256([]byte(sql))
		want = "query_" + hex.EncodeToString(h[:4])
	}
	return want + ".csv"
}
