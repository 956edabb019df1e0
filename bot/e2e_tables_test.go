package bot_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
)

// The table tests: a CSV a run writes is posted as a file and shown
// beside it as a data_table, within Slack's limits, through the fake
// Slack (which refuses tables past them), the real agent loop and the
// real sandbox.

// tableScript writes the programs of the table tests.
func tableScript(q string) (string, bool) {
	switch {
	case strings.Contains(q, "big table"):
		// 12,345 rows of 25 columns: more than a table shows.
		return `import csv
with open('big.csv', 'w', newline='') as f:
    w = csv.writer(f)
    w.writerow(['row'] + [f'c{j}' for j in range(1, 25)])
    for i in range(12345):
        w.writerow([i] + [j % 10 for j in range(1, 25)])
print('wrote 12345 rows')`, true
	case strings.Contains(q, "dataframe"):
		return `import pandas as pd
df = pd.DataFrame({'city': ['Oslo', 'Lima', 'Pune'], 'temp_c': [4.5, 19.25, 31.0], 'rank': [3, 2, 1]})
df.to_csv('cities.csv', index=False)
print(df)`, true
	}
	return dataScript(q)
}

// tableMessage returns the thread's message holding a data_table, and
// the table.
func tableMessage(t *testing.T, msgs []slacktest.Message) (slacktest.Message, dataTable) {
	t.Helper()
	for _, m := range msgs {
		var blocks []json.RawMessage
		json.Unmarshal(m.Blocks, &blocks)
		for _, b := range blocks {
			var tb dataTable
			if json.Unmarshal(b, &tb) == nil && tb.Type == "data_table" {
				return m, tb
			}
		}
	}
	t.Fatalf("no table in the thread:\n%s", dump(msgs))
	return slacktest.Message{}, dataTable{}
}

type dataTable struct {
	Type     string `json:"type"`
	Caption  string `json:"caption"`
	PageSize int    `json:"page_size"`
	Rows     [][]struct {
		Type  string   `json:"type"`
		Text  string   `json:"text"`
		Value *float64 `json:"value"`
	} `json:"rows"`
}

// TestCSVIsShownAsTable: a CSV a run writes is uploaded and, below the
// upload, shown as a table: numbers as numbers, a caption naming the file.
func TestCSVIsShownAsTable(t *testing.T) {
	h := newHarness(t, withScript(tableScript))
	d := h.post("C0DATA", "U0ALICE", mention+"save the squares of 1 to 10", "")
	msgs := h.waitReplies("C0DATA", d.TS, 1)
	m, tb := tableMessage(t, msgs)
	if tb.Caption != "squares.csv" || len(tb.Rows) != 11 || len(tb.Rows[0]) != 2 {
		t.Fatalf("table %q has %d rows, want squares.csv with a header and 10 rows", tb.Caption, len(tb.Rows))
	}
	if h := tb.Rows[0]; h[0].Type != "raw_text" || h[0].Text != "n" || h[1].Text != "square" {
		t.Errorf("header = %+v", h)
	}
	if c := tb.Rows[10][1]; c.Type != "raw_number" || c.Value == nil || *c.Value != 100 {
		t.Errorf("the last square is %+v, want the number 100", c)
	}
	if got := m.Visible(); !strings.Contains(got, "`squares.csv` · 10 rows · 2 columns") {
		t.Errorf("the table's caption line = %q", got)
	}
	if m.ThreadTS != d.TS || !strings.Contains(string(m.Metadata), "sandpiper_table") {
		t.Errorf("table message: thread %q, metadata %s", m.ThreadTS, m.Metadata)
	}
	// Beside the upload: after the file, before the answer.
	var upload, answer string
	for _, x := range msgs {
		if len(x.Files) > 0 && x.Files[0].Name == "squares.csv" {
			upload = x.TS
		}
		if isAnswer(x) {
			answer = x.TS
		}
	}
	if upload == "" || !(upload < m.TS && m.TS < answer) {
		t.Errorf("upload %s, table %s, answer %s: want the table between them", upload, m.TS, answer)
	}
	if strings.Contains(h.logs.String(), "posting a table failed") {
		t.Errorf("Slack refused the table:\n%s", h.logs)
	}
}

// TestBigCSVTableShowsTheFirstRows: a CSV of 12,345 rows and 25 columns
// is shown as its first 100 rows and 20 columns, and the caption says so;
// Slack (the fake enforces its limits) takes it.
func TestBigCSVTableShowsTheFirstRows(t *testing.T) {
	h := newHarness(t, withScript(tableScript))
	d := h.post("C0DATA", "U0ALICE", mention+"write a big table", "")
	msgs := h.waitReplies("C0DATA", d.TS, 1)
	m, tb := tableMessage(t, msgs)
	if len(tb.Rows) != 101 || len(tb.Rows[0]) != 20 || tb.PageSize < 1 || tb.PageSize > 100 {
		t.Fatalf("table of %d rows, %d columns, page size %d; want 101 (with the header), 20, 1–100", len(tb.Rows), len(tb.Rows[0]), tb.PageSize)
	}
	if c := tb.Rows[100][0]; c.Value == nil || *c.Value != 99 {
		t.Errorf("the last row shown starts with %+v, want 99", c)
	}
	if got := m.Visible(); !strings.Contains(got, "`big.csv` · first 100 of 12,345 rows · first 20 of 25 columns · the whole file is attached above") {
		t.Errorf("the caption line does not say what was cut: %q", got)
	}
	var posted bool
	for _, x := range msgs {
		for _, f := range x.Files {
			posted = posted || f.Name == "big.csv" && strings.Count(string(f.Data), "\n") == 12346
		}
	}
	if !posted {
		t.Errorf("big.csv was not posted whole:\n%s", dump(msgs))
	}
}

// TestDataFrameSavedAsCSVIsATable: a pandas DataFrame saved as CSV, as
// the tool's description tells the model, becomes a table.
func TestDataFrameSavedAsCSVIsATable(t *testing.T) {
	requireModules(t, "pandas")
	h := newHarness(t, withScript(tableScript))
	d := h.post("C0DATA", "U0ALICE", mention+"make a dataframe of three cities", "")
	msgs := h.waitReplies("C0DATA", d.TS, 1)
	_, tb := tableMessage(t, msgs)
	if len(tb.Rows) != 4 || tb.Rows[2][0].Text != "Lima" || tb.Rows[2][1].Value == nil || *tb.Rows[2][1].Value != 19.25 {
		t.Errorf("table = %+v", tb.Rows)
	}
	if desc := h.wire.requests()[0].Tools[0].Function.Description; !strings.Contains(desc, "save it as CSV") {
		t.Errorf("the tool's description does not say how to show a DataFrame:\n%s", desc)
	}
}
