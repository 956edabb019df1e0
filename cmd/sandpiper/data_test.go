package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	_ "modernc.org/sqlite"
)

// scriptedModel is an OpenAI-compatible chat completions API whose i-th
// reply is script[i]: a tool call, or an answer made from the last tool
// result.
type scriptedModel struct {
	*httptest.Server
	script []scriptStep

	mu     sync.Mutex
	bodies []map[string]any
}

type scriptStep struct {
	tool string // the tool to call, with args; "" to answer
	args any
	// answer writes the answer from the last tool result's content.
	answer func(lastResult string) string
}

func newScriptedModel(t *testing.T, script ...scriptStep) *scriptedModel {
	m := &scriptedModel{script: script}
	m.Server = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.Close)
	return m
}

func (m *scriptedModel) requests() []map[string]any {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]map[string]any(nil), m.bodies...)
}

func (m *scriptedModel) serve(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	json.NewDecoder(r.Body).Decode(&body)
	m.mu.Lock()
	m.bodies = append(m.bodies, body)
	n := len(m.bodies)
	m.mu.Unlock()
	if n > len(m.script) {
		http.Error(w, `{"error":{"message":"script ended"}}`, http.StatusBadRequest)
		return
	}
	step := m.script[n-1]
	msgs, _ := body["messages"].([]any)
	last, _ := msgs[len(msgs)-1].(map[string]any)
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
		w.(http.Flusher).Flush()
	}
	if step.tool != "" {
		args, _ := json.Marshal(step.args)
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": fmt.Sprintf("call_%d", n), "type": "function",
			"function": map[string]any{"name": step.tool, "arguments": string(args)}}}}, nil)
		chunk(map[string]any{}, "tool_calls")
	} else {
		content, _ := last["content"].(string)
		chunk(map[string]any{"content": step.answer(content)}, nil)
		chunk(map[string]any{}, "stop")
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

// shopDB writes an SQLite database of orders.
func shopDB(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "shop.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		"CREATE TABLE orders (id INTEGER PRIMARY KEY, region TEXT NOT NULL, amount DECIMAL(10,2))",
		"INSERT INTO orders (region, amount) VALUES ('north', 1000.25), ('north', 234.25), ('south', 7.25), ('east', NULL)",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// TestAskData asks about a database through the terminal: the model
// describes the source, queries it, charts the saved result in Python and
// answers; a follow-up reads the saved result again.
func TestAskData(t *testing.T) {
	requireSandbox(t)
	path := shopDB(t)
	pyOutput := func(content string) string {
		var res struct{ Output string }
		json.Unmarshal([]byte(content), &res)
		return strings.TrimSpace(res.Output)
	}
	chart := `import pandas as pd
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
df = pd.read_csv("/mnt/data/sales_by_region.csv")
df.plot.bar(x="region", y="total")
plt.savefig("sales.png")
print(df.loc[df.total.idxmax(), "region"], df.total.max())`
	m := newScriptedModel(t,
		scriptStep{tool: "describeData", args: map[string]string{"source": "shop"}},
		scriptStep{tool: "runSQL", args: map[string]string{"source": "shop", "name": "sales_by_region",
			"sql": "SELECT region, sum(amount) AS total FROM orders GROUP BY region ORDER BY total DESC"}},
		scriptStep{tool: "executeCode", args: map[string]string{"code": chart}},
		scriptStep{answer: func(c string) string { return "The top region is " + pyOutput(c) + "." }},
		// The follow-up: the saved result is still there.
		scriptStep{tool: "executeCode", args: map[string]string{"code": `import pandas as pd
print(len(pd.read_csv("/mnt/data/sales_by_region.csv")))`}},
		scriptStep{answer: func(c string) string { return "There are " + pyOutput(c) + " regions." }},
	)
	dir := t.TempDir()
	t.Chdir(dir)
	for k, v := range map[string]string{
		"SANDPIPER_MODEL_API": "openai", "SANDPIPER_MODEL_BASE_URL": m.URL + "/v1", "SANDPIPER_MODEL_API_KEY": "test-key", "SANDPIPER_MODEL": "test-model",
		"SANDPIPER_PYTHON": testPython, "SANDPIPER_DEBUG": "", "NO_COLOR": "1",
		"SANDPIPER_SOURCE_SHOP": "sqlite:" + path,
	} {
		t.Setenv(k, v)
	}
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"ask", "--plain"}, strings.NewReader("Which region sells most?\nHow many regions are there?\n"), &stdout, &stderr)
	out := stdout.String()
	t.Logf("stdout:\n%s\nstderr:\n%s", out, &stderr)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{
		"SQL · shop\n",
		"  SELECT region, sum(amount) AS total FROM orders GROUP BY region ORDER BY total DESC\n✓ 3 rows · SQLite · ",
		"  region  total\n  ──────  ──────\n  north   1234.5\n  south   7.25\n  east    NULL\n",
		"  result in /mnt/data/sales_by_region.csv (",
		"  north 1234.5\n",
		"The top region is north 1234.5.",
		"There are 3 regions.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "sandpiper-output", "sales.png")); err != nil {
		t.Errorf("the chart was not saved: %v", err)
	}
	reqs := m.requests()
	if len(reqs) != 6 {
		t.Fatalf("%d requests, want 6", len(reqs))
	}
	// The model was told of the source and its table, and offered the tools.
	msgs := reqs[0]["messages"].([]any)
	system := msgs[0].(map[string]any)["content"].(string)
	if !strings.Contains(system, "- shop (SQLite, 1 tables and views):\n  - orders (table): id INTEGER, region TEXT, amount DECIMAL(10,2)") {
		t.Errorf("the system prompt does not list the source:\n%s", system)
	}
	var tools []string
	for _, tl := range reqs[0]["tools"].([]any) {
		tools = append(tools, tl.(map[string]any)["function"].(map[string]any)["name"].(string))
	}
	if strings.Join(tools, ",") != "executeCode,describeData,runSQL" {
		t.Errorf("tools %v", tools)
	}
	// The model read the query's result: columns, rows, the file.
	msgs = reqs[2]["messages"].([]any)
	result := msgs[len(msgs)-1].(map[string]any)["content"].(string)
	for _, want := range []string{`"rows":3`, `"file":"/mnt/data/sales_by_region.csv"`, `["north","1234.5"]`, `[["north","1234.5"],["south","7.25"],["east",null]]`} {
		if !strings.Contains(result, want) {
			t.Errorf("runSQL's result lacks %s: %s", want, result)
		}
	}
}

// TestDoctorChecksSources: doctor says which sources work, and never
// shows a source's password.
func TestDoctorChecksSources(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("SLACK_BOT_TOKEN", "")
	t.Setenv("SANDPIPER_DATA_DIR", t.TempDir())
	t.Setenv("SANDPIPER_SANDBOX", "none")
	t.Setenv("SANDPIPER_SOURCE_SHOP", "sqlite:"+shopDB(t))
	t.Setenv("SANDPIPER_SOURCE_GONE", "sqlite:/nowhere/gone.db")
	t.Setenv("SANDPIPER_SOURCE_WAREHOUSE", "postgres://reader:Secret-pw-42@127.0.0.1:1/dw?sslmode=disable&connect_timeout=2")
	var out, errb bytes.Buffer
	run(context.Background(), []string{"doctor"}, strings.NewReader(""), &out, &errb)
	got := out.String()
	for _, want := range []string{
		"ok   data source shop: SQLite, 1 tables and views readable\n",
		"FAIL data source gone: SQLite: the database file cannot be read: stat /nowhere/gone.db: no such file or directory\n",
		"FAIL data source warehouse: PostgreSQL: the database cannot be reached",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Secret-pw-42") {
		t.Errorf("doctor printed a password:\n%s", got)
	}
}
