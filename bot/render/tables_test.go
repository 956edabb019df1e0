package render

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandpiper-bot/sandpiper/bot/slacktest"
	"github.com/slack-go/slack"
)

func TestReadCSVTable(t *testing.T) {
	rows := func(n int) string {
		var b strings.Builder
		b.WriteString("n,square\n")
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "%d,%d\n", i, i*i)
		}
		return b.String()
	}
	wide := func(cols int) string {
		var h, r []string
		for i := range cols {
			h = append(h, fmt.Sprintf("c%d", i+1))
			r = append(r, fmt.Sprint(i))
		}
		return strings.Join(h, ",") + "\n" + strings.Join(r, ",") + "\n"
	}
	for _, tc := range []struct {
		name, file, data string
		ok               bool
		header           []string
		first            []string // the first data row
		shown, total     int      // data rows shown and in the file
		cols             int      // columns in the file
		cut              bool
	}{
		{name: "plain", file: "a.csv", data: "month,revenue\n2024-01,1007\n2024-02,2007\n", ok: true,
			header: []string{"month", "revenue"}, first: []string{"2024-01", "1007"}, shown: 2, total: 2, cols: 2},
		{name: "bom and crlf", file: "a.csv", data: "\xef\xbb\xbfx,y\r\n1,2\r\n", ok: true,
			header: []string{"x", "y"}, first: []string{"1", "2"}, shown: 1, total: 1, cols: 2},
		{name: "semicolons", file: "de.csv", data: "Monat;Umsatz\nJan;1,5\nFeb;2,5\n", ok: true,
			header: []string{"Monat", "Umsatz"}, first: []string{"Jan", "1,5"}, shown: 2, total: 2, cols: 2},
		{name: "tabs", file: "a.tsv", data: "a\tb,c\n1\t2,3\n", ok: true,
			header: []string{"a", "b,c"}, first: []string{"1", "2,3"}, shown: 1, total: 1, cols: 2},
		{name: "quoted line break", file: "q.csv", data: "name,note\nx,\"two\nlines\"\ny,\"say \"\"hi\"\"\"\n", ok: true,
			header: []string{"name", "note"}, first: []string{"x", "two lines"}, shown: 2, total: 2, cols: 2},
		{name: "pandas index", file: "df.csv", data: ",value\n0,1.5\n1,2.5\n", ok: true,
			header: []string{"column 1", "value"}, first: []string{"0", "1.5"}, shown: 2, total: 2, cols: 2},
		{name: "ragged", file: "r.csv", data: "a,b,c\n1\n2,3,4,5\n", ok: true,
			header: []string{"a", "b", "c", "column 4"}, first: []string{"1", "", "", ""}, shown: 2, total: 2, cols: 4},
		{name: "blank lines", file: "b.csv", data: "a\n\n1\n\n2\n", ok: true,
			header: []string{"a"}, first: []string{"1"}, shown: 2, total: 2, cols: 1},
		{name: "bare quote", file: "h.csv", data: "name,height\nann,5'11\"\nbob,6'0\"\n", ok: true,
			header: []string{"name", "height"}, first: []string{"ann", "5'11\""}, shown: 2, total: 2, cols: 2},
		{name: "hundred rows", file: "s.csv", data: rows(100), ok: true,
			header: []string{"n", "square"}, first: []string{"1", "1"}, shown: 100, total: 100, cols: 2},
		{name: "many rows", file: "s.csv", data: rows(12345), ok: true,
			header: []string{"n", "square"}, first: []string{"1", "1"}, shown: 100, total: 12345, cols: 2},
		{name: "twenty columns", file: "w.csv", data: wide(20), ok: true, shown: 1, total: 1, cols: 20},
		{name: "wide", file: "w.csv", data: wide(31), ok: true, shown: 1, total: 1, cols: 31},
		{name: "long cell", file: "l.csv", data: "a\n" + strings.Repeat("x", 500) + "\n", ok: true,
			header: []string{"a"}, first: []string{strings.Repeat("x", tableCellChars-1) + "…"}, shown: 1, total: 1, cols: 1, cut: true},
		// 100 rows of 20 cells of 20 characters are 40,000: Slack takes
		// 10,000 across a table's cells.
		{name: "too much text", file: "t.csv", data: strings.Repeat(strings.Repeat("abcdefghijklmnopqrst,", 19)+"abcdefghijklmnopqrst\n", 101), ok: true,
			shown: tableChars/400 - 1, total: 100, cols: 20},
		{name: "hostile", file: "x.csv", data: "a\n\x1b[31mred\u202e\n", ok: true, header: []string{"a"}, first: []string{"␛[31mred�"}, shown: 1, total: 1, cols: 1},
		{name: "header only", file: "h.csv", data: "a,b\n"},
		{name: "empty", file: "e.csv", data: ""},
		{name: "blank", file: "e.csv", data: "\n\n"},
		{name: "header past the budget", file: "big.csv", data: strings.Repeat("x", tableReadBytes+1) + "\n1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb, ok := ReadTable(tc.file, []byte(tc.data))
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if tc.header != nil && !equal(tb.Header, tc.header) {
				t.Errorf("header = %q, want %q", tb.Header, tc.header)
			}
			if tc.first != nil && !equal(tb.Rows[0], tc.first) {
				t.Errorf("first row = %q, want %q", tb.Rows[0], tc.first)
			}
			if len(tb.Rows) != tc.shown || tb.TotalRows != tc.total || tb.TotalCols != tc.cols || tb.CellsCut != tc.cut {
				t.Errorf("shows %d of %d rows, %d columns, cut %v; want %d of %d, %d, %v", len(tb.Rows), tb.TotalRows, tb.TotalCols, tb.CellsCut, tc.shown, tc.total, tc.cols, tc.cut)
			}
			if len(tb.Header) > slackTableColumns || len(tb.Rows) > slackTableRows {
				t.Errorf("%d columns, %d rows: over Slack's limits", len(tb.Header), len(tb.Rows))
			}
			chars := cellChars(tb.Header)
			for _, r := range tb.Rows {
				chars += cellChars(r)
				if len(r) != len(tb.Header) {
					t.Errorf("row %q is not as wide as the header", r)
				}
			}
			if chars > tableChars {
				t.Errorf("%d characters in cells, over %d", chars, tableChars)
			}
		})
	}
}

func equal(a, b []string) bool {
	return strings.Join(a, "\x00") == strings.Join(b, "\x00") && len(a) == len(b)
}

func TestTableCell(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // the cell's JSON
	}{
		{"1007", `{"type":"raw_number","value":1007}`},
		{"-2.5", `{"type":"raw_number","value":-2.5}`},
		{"0.10", `{"type":"raw_number","value":0.1,"text":"0.10"}`},
		{"007", `{"type":"raw_number","value":7,"text":"007"}`},
		{"1e3", `{"type":"raw_number","value":1000,"text":"1e3"}`},
		{".5", `{"type":"raw_number","value":0.5,"text":".5"}`},
		{"+3", `{"type":"raw_number","value":3,"text":"+3"}`},
		{"1,234", `{"type":"raw_text","text":"1,234"}`},
		{"12%", `{"type":"raw_text","text":"12%"}`},
		{"NaN", `{"type":"raw_text","text":"NaN"}`},
		{"inf", `{"type":"raw_text","text":"inf"}`},
		{"0x10", `{"type":"raw_text","text":"0x10"}`},
		{"1_000", `{"type":"raw_text","text":"1_000"}`},
		{"1e999", `{"type":"raw_text","text":"1e999"}`},
		{"2024-01", `{"type":"raw_text","text":"2024-01"}`},
		{"", `{"type":"raw_text","text":"—"}`},
	} {
		b, err := json.Marshal(tableCell(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("tableCell(%q) = %s, want %s", tc.in, b, tc.want)
		}
	}
}

func TestScanRecords(t *testing.T) {
	for _, tc := range []struct {
		data  string
		ends  []int
		total int
	}{
		{"", nil, 0},
		{"a\n", []int{2}, 1},
		{"a\nb", []int{2, 3}, 2},
		{"a\r\n\r\nb\r\n", []int{3, 8}, 2},
		{"\"x\ny\",1\nz\n", []int{8, 10}, 2},
		{"a\"b\nc\n", []int{4, 6}, 2}, // a quote inside a field opens nothing
		{"\"a\"\"\n\"\nb\n", []int{7, 9}, 2},
	} {
		ends, total := scanRecords([]byte(tc.data), ',', 10)
		if fmt.Sprint(ends) != fmt.Sprint(tc.ends) || total != tc.total {
			t.Errorf("scanRecords(%q) = %v, %d; want %v, %d", tc.data, ends, total, tc.ends, tc.total)
		}
	}
}

// TestTableGolden: the table message's blocks, as Slack gets them.
func TestTableGolden(t *testing.T) {
	many := "region,units,price\n"
	for i := range 150 {
		many += fmt.Sprintf("r%d,%d,%d.50\n", i, i*10, i)
	}
	for _, tc := range []struct{ name, file, data string }{
		{"table_small", "sales_by_month.csv", "month,region,revenue\n2024-01,north,1007\n2024-02,north,2007.5\n2024-03,,0.10\n"},
		{"table_cut", "out/`big`<table>.csv", many},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb, ok := ReadTable(tc.file, []byte(tc.data))
			if !ok {
				t.Fatal("no table")
			}
			blocks := tb.Blocks()
			checkLimits(t, []slack.Block{blocks[1]})
			slacktest.GoldenJSON(t, filepath.Join("testdata", "tables", tc.name+".json"), map[string]any{"text": tb.Fallback(), "blocks": blocks})
		})
	}
}
