package datasource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// The tools' names, as the model calls them.
const (
	DescribeToolName = "describeData"
	QueryToolName    = "runSQL"
)

// Budgets of the model's prompt and of describeData's result.
const (
	promptSchemaBytes  = 3 << 10 // a source's tables in the prompt, else names only
	promptTimeout      = 5 * time.Second
	describeBytes      = 24 << 10 // the tables of a source
	sampleRows         = 5
	promptTableNames   = 60
	describeTableNames = 400
)

// Tools returns the two tools that read the sources: describeData (what
// is there) and runSQL (one read-only statement). Both are offered only
// in runs that may query a source ([agent.RunOptions.Sources]), and
// describeData's instructions tell the model which.
func (s *Set) Tools() []agent.Tool {
	return []agent.Tool{&describeTool{s}, &queryTool{s}}
}

type describeTool struct{ s *Set }
type queryTool struct{ s *Set }

var (
	_ agent.RunTool = (*describeTool)(nil)
	_ agent.RunTool = (*queryTool)(nil)
)

func (t *queryTool) Spec() agent.ToolSpec {
	l := t.s.lim
	return agent.ToolSpec{
		Name: QueryToolName,
		Description: "Run one SQL statement on a data source and get its result. It runs read-only on the database's side (a read-only transaction that is rolled back): " +
			"writes of any kind fail, so do not try them. Send one statement per call, in the source's SQL dialect. " +
			fmt.Sprintf("Limits: %s per statement, %s rows, %s of result; a result cut at a limit says so. ", l.Timeout, commas(int64(l.Rows)), sandbox.FormatSize(l.Bytes)) +
			"Aggregate, filter and join in SQL where you can: the database is faster than Python for that. " +
			"The result gives the columns with their types, the row count and the first rows; the whole result is saved as a CSV file in " + sandbox.WorkDir +
			" (its path is in `file`, and `read` is the pandas call that reads it with the right types), so executeCode can chart or analyse it, also in later questions. " +
			"Binary values are written as \\x and hex digits, NULL as an empty field. A failed statement returns `error`: fix the SQL and try again.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"source":{"type":"string","description":"The data source's name."},` +
			`"sql":{"type":"string","description":"One SQL statement, e.g. SELECT region, sum(amount) FROM orders GROUP BY region."},` +
			`"name":{"type":"string","description":"Optional short name for the result's CSV file (letters, digits, _), e.g. sales_by_region; by default it is named after the SQL."}},` +
			`"required":["source","sql"],"additionalProperties":false}`),
	}
}

func (t *queryTool) ForRun(_ context.Context, run agent.RunInfo) (string, bool) {
	return "", t.s.anyGranted(run)
}

func (t *queryTool) Call(ctx context.Context, ws agent.Workspace, input json.RawMessage) (*agent.ToolOutput, error) {
	in, err := DecodeQuery(input)
	if err != nil {
		return nil, err
	}
	content, q, err := t.s.Query(ctx, ws, in.Source, in.SQL, in.Name)
	if err != nil {
		return nil, err
	}
	return &agent.ToolOutput{Content: content, IsError: q.Outcome != OutcomeOK && q.Outcome != OutcomeTruncated, Query: q}, nil
}

// QueryInput is runSQL's input.
type QueryInput struct {
	Source string `json:"source"`
	SQL    string `json:"sql"`
	Name   string `json:"name,omitempty"`
}

// DecodeQuery reads runSQL's input, for the tool and for observers that
// show the SQL before it runs. Its errors are written for the model.
func DecodeQuery(input json.RawMessage) (QueryInput, error) {
	var in QueryInput
	if err := json.Unmarshal(input, &in); err != nil {
		var s string
		if json.Unmarshal(input, &s) != nil || json.Unmarshal([]byte(s), &in) != nil {
			return in, fmt.Errorf(`invalid input: %v; send an object like {"source": "sales", "sql": "SELECT count(*) FROM orders"}`, err)
		}
	}
	return in, nil
}

func (t *describeTool) Spec() agent.ToolSpec {
	return agent.ToolSpec{
		Name: DescribeToolName,
		Description: "Describe the data sources: without a table, a source's tables and views with their columns, types and estimated row counts; " +
			"with a table, its columns (types, comments) and a few sample rows. Use it before writing SQL against tables you have not seen.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"source":{"type":"string","description":"The data source's name."},` +
			`"table":{"type":"string","description":"Optional: one table or view to describe in detail, as listed."}},` +
			`"required":["source"],"additionalProperties":false}`),
	}
}

func (t *describeTool) Call(ctx context.Context, _ agent.Workspace, input json.RawMessage) (*agent.ToolOutput, error) {
	var in struct {
		Source string `json:"source"`
		Table  string `json:"table"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, fmt.Errorf(`invalid input: %v; send an object like {"source": "sales"} or {"source": "sales", "table": "orders"}`, err)
	}
	text, err := t.s.Describe(ctx, in.Source, in.Table)
	if err != nil {
		var un *unavailableError
		if errors.As(err, &un) {
			return &agent.ToolOutput{Content: "Error: " + safetext.Text(err.Error()), IsError: true}, nil
		}
		return nil, err
	}
	return &agent.ToolOutput{Content: safetext.Text(text)}, nil
}

// Describe returns a source's tables, or one table in detail with
// sampleRows rows, as the model reads them.
func (s *Set) Describe(ctx context.Context, source, table string) (string, error) {
	src, err := s.granted(ctx, source)
	if err != nil {
		return "", err
	}
	tables, err := s.schema(ctx, src)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", &unavailableError{msg: fmt.Sprintf("source %s is unavailable: %v", src.Name, err)}
	}
	if table == "" {
		var b strings.Builder
		fmt.Fprintf(&b, "Source %s (%s): %d tables and views.\n", src.Name, src.Engine(), len(tables))
		if text, ok := compact(tables, describeBytes); ok {
			b.WriteString(text)
		} else {
			b.WriteString("Too many to list with their columns; describe one with {\"table\": …}. Names:\n")
			for i, t := range tables {
				if i == describeTableNames {
					fmt.Fprintf(&b, "… and %d more\n", len(tables)-i)
					break
				}
				b.WriteString("  - " + t.Name + "\n")
			}
		}
		return b.String(), nil
	}
	t, ok := findTable(tables, table)
	if !ok {
		return "", fmt.Errorf("source %s has no table or view %q that this role can read; describe the source without a table to list them", src.Name, safetext.Line(table))
	}
	var b strings.Builder
	b.WriteString(describeTable(t))
	sk := newSink(Limits{Rows: sampleRows, Bytes: 64 << 10})
	err = src.eng.query(ctx, "SELECT * FROM "+src.eng.quote(t.Name)+" LIMIT "+fmt.Sprint(sampleRows), Limits{Timeout: min(s.lim.Timeout, 10*time.Second)}, sk)
	switch {
	case err != nil && ctx.Err() != nil:
		return "", ctx.Err()
	case err != nil:
		fmt.Fprintf(&b, "Sample rows could not be read: %v\n", s.wrap(src, err))
	default:
		rows, _ := modelPreview(sk.preview, sk.rows)
		enc, _ := json.Marshal(rows)
		fmt.Fprintf(&b, "Sample rows (%d; null is NULL): %s\n", len(rows), enc)
	}
	return b.String(), nil
}

func findTable(tables []Table, name string) (Table, bool) {
	for _, t := range tables {
		if t.Name == name {
			return t, true
		}
	}
	for _, t := range tables {
		if strings.EqualFold(t.Name, name) || strings.EqualFold(t.Name[strings.LastIndexByte(t.Name, '.')+1:], name) {
			return t, true
		}
	}
	return Table{}, false
}

func (s *Set) anyGranted(run agent.RunInfo) bool {
	for _, n := range s.Names() {
		if run.Granted(n) {
			return true
		}
	}
	return false
}

// ForRun lists the sources the run may query in its instructions: each
// with its engine and, when small enough, its tables and columns; a
// source that cannot be reached is listed as unavailable.
func (t *describeTool) ForRun(ctx context.Context, run agent.RunInfo) (string, bool) {
	s := t.s
	if !s.anyGranted(run) {
		return "", false
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Data sources: the team's databases below can be queried with %s (one read-only SQL statement per call) and described with %s. ", QueryToolName, DescribeToolName)
	b.WriteString("Answer questions about this data from the databases: compute aggregates in SQL, then use executeCode on the saved CSV for charts or further analysis. Quote numbers from the results, and mention which source and query they come from.\n")
	for _, name := range s.Names() {
		if !run.Granted(name) {
			continue
		}
		src := s.sources[name]
		pctx, cancel := context.WithTimeout(ctx, promptTimeout)
		tables, err := s.schema(pctx, src)
		cancel()
		if err != nil {
			fmt.Fprintf(&b, "- %s: unavailable at the moment (%s)\n", name, safetext.Line(err.Error()))
			continue
		}
		fmt.Fprintf(&b, "- %s (%s, %d tables and views)", name, src.Engine(), len(tables))
		if text, ok := compact(tables, promptSchemaBytes); ok && len(tables) > 0 {
			b.WriteString(":\n" + safetext.Text(text))
			continue
		}
		var names []string
		for i, t := range tables {
			if i == promptTableNames {
				names = append(names, fmt.Sprintf("and %d more", len(tables)-i))
				break
			}
			names = append(names, t.Name)
		}
		b.WriteString(": " + safetext.Line(strings.Join(names, ", ")) + "; describe them before querying\n")
	}
	return strings.TrimRight(b.String(), "\n"), true
}
