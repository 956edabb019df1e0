package datasource_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/agent/datasource"
	"github.com/sandpiper-bot/sandpiper/agent/datasource/dbtest"
	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// granted is ctx of a run that may query the sources.
func granted(ctx context.Context, sources ...string) context.Context {
	return agent.WithRunInfo(ctx, agent.RunInfo{Sources: sources, User: "U1", Channel: "C1"})
}

// query runs sql on source and returns the model's JSON, decoded, and
// the query.
func query(t *testing.T, set *datasource.Set, ws agent.Workspace, source, sql string) (map[string]any, *agent.Query) {
	t.Helper()
	content, q, err := set.Query(granted(t.Context(), source), ws, source, sql, "")
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(content), &res); err != nil {
		t.Fatalf("%s: result %q: %v", sql, content, err)
	}
	return res, q
}

// file returns the content of the workspace's file.
func file(t *testing.T, ws agent.Workspace, name string) string {
	t.Helper()
	files, _ := ws.Files(t.Context())
	for _, f := range files {
		if f.Name == name {
			return string(f.Data)
		}
	}
	t.Fatalf("no file %s in the workspace", name)
	return ""
}

func newSQLite(t *testing.T, stmts ...string) string {
	t.Helper()
	return dbtest.SQLite(t, "shop.db", stmts...)
}

func openSet(t *testing.T, lim datasource.Limits, cfgs ...datasource.Config) *datasource.Set {
	t.Helper()
	set, err := datasource.Open(cfgs, datasource.Options{Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(set.Close)
	return set
}

func TestSQLite(t *testing.T) {
	path := newSQLite(t,
		`CREATE TABLE orders (id INTEGER PRIMARY KEY, region TEXT, amount DECIMAL(12,2), placed DATE, note TEXT, raw BLOB, big INTEGER)`,
		`INSERT INTO orders VALUES (1, 'north', 12.50, '2024-01-31', 'Grüße, "quoted"', x'00ff10', 9223372036854775807)`,
		`INSERT INTO orders VALUES (2, 'south', 7.25, '2024-02-29', '', NULL, -1)`,
		`INSERT INTO orders VALUES (3, NULL, NULL, NULL, NULL, NULL, NULL)`,
	)
	set := openSet(t, datasource.Limits{Rows: 100}, datasource.Config{Name: "shop", URL: "sqlite:" + path})
	ws := agent.NewMemWorkspace(nil, 0)

	t.Run("types survive", func(t *testing.T) {
		res, q := query(t, set, ws, "shop", "SELECT * FROM orders ORDER BY id")
		if q.Outcome != "ok" || q.Rows != 3 || q.Engine != "SQLite" {
			t.Fatalf("query %+v", q)
		}
		got := file(t, ws, q.File)
		want := "id,region,amount,placed,note,raw,big\n" +
			"1,north,12.5,2024-01-31,\"Grüße, \"\"quoted\"\"\",\\x00ff10,9223372036854775807\n" +
			"2,south,7.25,2024-02-29,\"\",,-1\n" +
			"3,,,,,,\n"
		if got != want {
			t.Errorf("CSV:\n%s\nwant:\n%s", got, want)
		}
		if res["file"] != sandbox.WorkDir+"/"+q.File || !strings.Contains(res["read"].(string), "pd.read_csv(") {
			t.Errorf("result %v", res)
		}
		if !strings.Contains(res["read"].(string), `'placed'`) {
			t.Errorf("the read hint does not parse the date: %v", res["read"])
		}
		if q.Preview[2][1] != agent.QueryNull || q.Preview[1][4] != "" {
			t.Errorf("preview %q", q.Preview)
		}
	})
	t.Run("writes refused", func(t *testing.T) {
		for _, stmt := range []string{
			"INSERT INTO orders (id) VALUES (9)",
			"UPDATE orders SET amount = 0",
			"DELETE FROM orders",
			"DROP TABLE orders",
			"CREATE TABLE x (a)",
			"ATTACH DATABASE '" + filepath.Join(t.TempDir(), "new.db") + "' AS x",
			"PRAGMA query_only = OFF",
		} {
			res, q := query(t, set, ws, "shop", stmt)
			if q.Outcome != "failed" || res["error"] == nil {
				t.Errorf("%s: outcome %s, result %v", stmt, q.Outcome, res)
			}
		}
		_, q := query(t, set, ws, "shop", "SELECT count(*), sum(amount) FROM orders")
		if q.Preview[0][0] != "3" || q.Preview[0][1] != "19.75" {
			t.Errorf("the data changed: %q", q.Preview)
		}
	})
	t.Run("two statements", func(t *testing.T) {
		res, q := query(t, set, ws, "shop", "SELECT 1; SELECT 2")
		if q.Outcome != "failed" {
			t.Errorf("outcome %s, result %v", q.Outcome, res)
		}
	})
	t.Run("errors the model can fix", func(t *testing.T) {
		res, q := query(t, set, ws, "shop", "SELECT * FROM nowhere")
		if q.Outcome != "failed" || !strings.Contains(res["error"].(string), "no such table: nowhere") {
			t.Errorf("outcome %s, result %v", q.Outcome, res)
		}
	})
	t.Run("row limit", func(t *testing.T) {
		res, q := query(t, set, ws, "shop", "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n")
		if q.Outcome != "truncated" || q.Rows != 100 || !strings.Contains(res["truncated"].(string), "more than 100 rows") {
			t.Errorf("outcome %s rows %d, result %v", q.Outcome, q.Rows, res)
		}
		if n := strings.Count(file(t, ws, q.File), "\n"); n != 101 {
			t.Errorf("the file has %d lines, want 101", n)
		}
	})
	t.Run("not granted", func(t *testing.T) {
		_, _, err := set.Query(granted(t.Context()), ws, "shop", "SELECT 1", "")
		if err == nil || !strings.Contains(err.Error(), "no data source is available") {
			t.Errorf("err = %v", err)
		}
		_, _, err = set.Query(granted(t.Context(), "shop"), ws, "other", "SELECT 1", "")
		if err == nil || !strings.Contains(err.Error(), `unknown source "other"; the sources available in this conversation are: shop`) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("describe", func(t *testing.T) {
		text, err := set.Describe(granted(t.Context(), "shop"), "shop", "")
		if err != nil || !strings.Contains(text, "orders (table): id INTEGER, region TEXT, amount DECIMAL(12,2)") {
			t.Errorf("%q, %v", text, err)
		}
		text, err = set.Describe(granted(t.Context(), "shop"), "shop", "ORDERS")
		if err != nil || !strings.Contains(text, "Sample rows (3") || !strings.Contains(text, `"north"`) {
			t.Errorf("%q, %v", text, err)
		}
	})
}

func TestSQLiteTimeout(t *testing.T) {
	path := newSQLite(t, "CREATE TABLE t (a)")
	set := openSet(t, datasource.Limits{Timeout: 300 * time.Millisecond}, datasource.Config{Name: "s", URL: path})
	start := time.Now()
	res, q := query(t, set, nil, "s", "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n")
	if q.Outcome != "timeout" || !strings.Contains(res["error"].(string), "limit") {
		t.Errorf("outcome %s, result %v", q.Outcome, res)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s", d)
	}
}

func TestUnavailableSource(t *testing.T) {
	set := openSet(t, datasource.Limits{}, datasource.Config{Name: "gone", URL: "sqlite:" + filepath.Join(t.TempDir(), "missing.db")},
		datasource.Config{Name: "bad", URL: "oracle://x"})
	for _, name := range []string{"gone", "bad"} {
		res, q := query(t, set, nil, name, "SELECT 1")
		if q.Outcome != "unavailable" || !strings.Contains(res["error"].(string), "source "+name+" is unavailable") {
			t.Errorf("%s: outcome %s, result %v", name, q.Outcome, res)
		}
	}
	checks := set.Check(t.Context())
	if len(checks) != 2 || checks[0].OK || checks[1].OK {
		t.Errorf("checks %+v", checks)
	}
	fmt.Println(checks)
}

// TestPromptListsGrantedSources: the run's instructions list the sources
// it may query, with their tables, and an unreachable one as unavailable;
// a run granted none is offered neither tool.
func TestPromptListsGrantedSources(t *testing.T) {
	path := newSQLite(t, "CREATE TABLE t (a INTEGER, b TEXT)")
	set := openSet(t, datasource.Limits{}, datasource.Config{Name: "shop", URL: path},
		datasource.Config{Name: "gone", URL: "sqlite:" + filepath.Join(t.TempDir(), "gone.db")},
		datasource.Config{Name: "secret", URL: path})
	tools := set.Tools()
	run := agent.RunInfo{Sources: []string{"shop", "gone"}}
	text, ok := tools[0].(agent.RunTool).ForRun(agent.WithRunInfo(t.Context(), run), run)
	if !ok || !strings.Contains(text, "- gone: unavailable at the moment (") ||
		!strings.Contains(text, "- shop (SQLite, 1 tables and views):\n  - t (table): a INTEGER, b TEXT") || strings.Contains(text, "secret") {
		t.Errorf("offered %v:\n%s", ok, text)
	}
	for _, tool := range tools {
		if _, ok := tool.(agent.RunTool).ForRun(t.Context(), agent.RunInfo{Sources: []string{"elsewhere"}}); ok {
			t.Errorf("%s offered to a run granted no source", tool.Spec().Name)
		}
	}
}
