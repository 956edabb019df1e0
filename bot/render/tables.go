package render

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/sandpiper-bot/sandpiper/sandbox/safetext"
)

// Table is the head of a CSV file a run wrote, as a data_table block
// shows it: the header, and the data rows that fit Slack's limits. Cells
// are plain text, neutralised ([safetext.Line]) and cut.
type Table struct {
	Name   string
	Header []string
	Rows   [][]string
	// TotalRows counts the file's data rows (the header not included);
	// TotalCols the columns of its widest row read.
	TotalRows, TotalCols int
	// CellsCut says that a cell's text was cut to tableCellChars.
	CellsCut bool
}

// IsTableFile reports whether a file a run wrote is shown as a table.
func IsTableFile(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".csv", ".tsv":
		return true
	}
	return false
}

// ReadTable reads the head of a CSV (or TSV) file for a table: the
// delimiter is sniffed (comma, semicolon or tab), a UTF-8 byte order
// mark dropped, bytes that are not UTF-8 replaced. Only the records
// shown are parsed, within tableReadBytes; the rest are counted. The
// first record is the header. ok is false when there is no data row to
// show.
func ReadTable(name string, data []byte) (t *Table, ok bool) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	comma := sniffDelimiter(data, strings.EqualFold(path.Ext(name), ".tsv"))
	ends, total := scanRecords(data, comma, slackTableRows+1)
	if total < 2 {
		return nil, false
	}
	// Parse only what is shown, and no more than tableReadBytes of it.
	n := len(ends)
	for n > 0 && ends[n-1] > tableReadBytes {
		n--
	}
	if n < 2 {
		return nil, false // a header and a row do not fit the budget
	}
	r := csv.NewReader(bytes.NewReader(data[:ends[n-1]]))
	r.Comma, r.FieldsPerRecord, r.LazyQuotes = comma, -1, true
	var records [][]string
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) || err != nil && len(records) > 0 {
			break // a record csv cannot read ends the table before it
		}
		if err != nil {
			return nil, false
		}
		records = append(records, rec)
	}
	if len(records) < 2 {
		return nil, false
	}
	return newTable(name, records[0], records[1:], total-1)
}

// newTable makes the table of a header and the first data rows of
// totalRows: at most slackTableColumns columns, cells neutralised and
// cut, and the rows that fit tableChars. ok is false when no row fits.
func newTable(name string, header []string, records [][]string, totalRows int) (t *Table, ok bool) {
	t = &Table{Name: name, TotalRows: totalRows, TotalCols: len(header)}
	for _, rec := range records {
		t.TotalCols = max(t.TotalCols, len(rec))
	}
	cols := min(t.TotalCols, slackTableColumns)
	cell := func(s string) string {
		s = strings.TrimSpace(safetext.Line(cellSpaces.Replace(strings.ToValidUTF8(s, "\uFFFD"))))
		if utf8.RuneCountInString(s) > tableCellChars {
			s, t.CellsCut = Truncate(s, tableCellChars), true
		}
		return s
	}
	row := func(rec []string) []string {
		out := make([]string, cols)
		for i := range out {
			if i < len(rec) {
				out[i] = cell(rec[i])
			}
		}
		return out
	}
	t.Header = row(header)
	for i, h := range t.Header {
		if h == "" {
			t.Header[i] = fmt.Sprintf("column %d", i+1)
		}
	}
	chars := cellChars(t.Header)
	for _, rec := range records[:min(len(records), slackTableRows)] {
		r := row(rec)
		if chars += cellChars(r); chars > tableChars {
			break // Slack's limit on a table's text
		}
		t.Rows = append(t.Rows, r)
	}
	if len(t.Rows) == 0 {
		return nil, false
	}
	return t, true
}

// cellChars counts the characters of a row as Slack counts them against
// a table's limit: an empty cell is shown as emptyCell.
func cellChars(row []string) int {
	n := 0
	for _, c := range row {
		if c == "" {
			c = emptyCell
		}
		n += utf8.RuneCountInString(c)
	}
	return n
}

// cellSpaces turns the line breaks and tabs of a cell into spaces: a
// cell is one line.
var cellSpaces = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "\t", " ")

// emptyCell stands for an empty cell: Slack's raw_text needs a character.
const emptyCell = "—"

// reNumber matches a number written without locale: an optional sign,
// digits with an optional decimal point, an optional exponent. "1,234",
// "1 234", "12%", "NaN" and "inf" are text.
var reNumber = regexp.MustCompile(`^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$`)

// tableCell is a cell as Slack's data_table takes it: a number as a
// raw_number (so that its column sorts as numbers), shown as written when
// Go would write the value otherwise ("0.10", "007", "1e3"); anything else
// as raw_text.
func tableCell(s string) slack.DataTableCell {
	if s == "" {
		return slack.NewDataTableRawTextCell(emptyCell)
	}
	if reNumber.MatchString(s) {
		if v, err := strconv.ParseFloat(s, 64); err == nil {
			c := slack.NewDataTableRawNumberCell(v)
			if strconv.FormatFloat(v, 'f', -1, 64) != s {
				c.WithText(s)
			}
			return c
		}
	}
	return slack.NewDataTableRawTextCell(s)
}

// Blocks returns the table's message: the data_table, then a line naming
// the file and saying what was left out.
func (t *Table) Blocks() []slack.Block {
	return []slack.Block{t.dataTable(t.Name), ContextBlock(t.caption())}
}

// dataTable is the table's data_table block, captioned caption.
func (t *Table) dataTable(caption string) *slack.DataTableBlock {
	tb := slack.NewDataTableBlock(Truncate(safetext.Line(caption), 200)).WithPageSize(min(tablePageSize, len(t.Rows)))
	header := make([]slack.DataTableCell, len(t.Header))
	for i, h := range t.Header {
		header[i] = slack.NewDataTableRawTextCell(h)
	}
	tb.AddRow(header...)
	for _, r := range t.Rows {
		cells := make([]slack.DataTableCell, len(r))
		for i, c := range r {
			cells[i] = tableCell(c)
		}
		tb.AddRow(cells...)
	}
	return tb
}

// caption names the file and says how much of it the table shows:
// "`sales.csv` · first 100 of 12,345 rows · first 20 of 31 columns".
func (t *Table) caption() string {
	parts := []string{":bar_chart: `" + Escape(strings.ReplaceAll(Truncate(safetext.Line(t.Name), 120), "`", "'")) + "`"}
	rows := fmt.Sprintf("%s rows", Thousands(int64(t.TotalRows)))
	if t.TotalRows == 1 {
		rows = "1 row"
	}
	if len(t.Rows) < t.TotalRows {
		rows = fmt.Sprintf("first %s of %s rows", Thousands(int64(len(t.Rows))), Thousands(int64(t.TotalRows)))
	}
	cols := fmt.Sprintf("%d columns", t.TotalCols)
	if t.TotalCols == 1 {
		cols = "1 column"
	}
	if len(t.Header) < t.TotalCols {
		cols = fmt.Sprintf("first %d of %d columns", len(t.Header), t.TotalCols)
	}
	parts = append(parts, rows, cols)
	if t.CellsCut {
		parts = append(parts, fmt.Sprintf("long cells cut to %d characters", tableCellChars))
	}
	if len(t.Rows) < t.TotalRows || len(t.Header) < t.TotalCols || t.CellsCut {
		parts = append(parts, "the whole file is attached above")
	}
	return strings.Join(parts, " · ")
}

// Fallback is the table message's notification text.
func (t *Table) Fallback() string {
	return "Table: " + Truncate(safetext.Line(t.Name), 200)
}

// sniffDelimiter picks the delimiter of a CSV from its first line (up to
// 64 KiB): the most frequent of comma, semicolon and tab outside quotes; a
// comma when none is there. A .tsv file is read with tabs when its first
// line has one.
func sniffDelimiter(data []byte, tsv bool) rune {
	head := data[:min(len(data), 64<<10)]
	counts := map[rune]int{}
	quoted := false
	for _, c := range head {
		if c == '"' {
			quoted = !quoted
		}
		if quoted {
			continue
		}
		if c == '\n' {
			break
		}
		if c == ',' || c == ';' || c == '\t' {
			counts[rune(c)]++
		}
	}
	if tsv && counts['\t'] > 0 {
		return '\t'
	}
	best := ','
	for _, c := range []rune{';', '\t'} {
		if counts[c] > counts[best] {
			best = c
		}
	}
	return best
}

// scanRecords finds where the first keep records of a CSV end (offsets
// just past each one's line break) and counts all its records, without
// parsing their fields: a quote opens a quoted field only at a field's
// start, as encoding/csv reads it, so a line break inside quotes does not
// end a record, and blank lines are not records.
func scanRecords(data []byte, comma rune, keep int) (ends []int, total int) {
	quoted, fieldStart, empty := false, true, true
	end := func(i int) {
		if !empty {
			total++
			if len(ends) < keep {
				ends = append(ends, i)
			}
		}
		fieldStart, empty = true, true
	}
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case quoted:
			if c == '"' {
				if i+1 < len(data) && data[i+1] == '"' {
					i++ // an escaped quote
				} else {
					quoted = false
				}
			}
		case c == '\n':
			end(i + 1)
			continue
		case c == '\r':
			continue
		case c == '"' && fieldStart:
			quoted = true
		}
		empty = false
		fieldStart = rune(c) == comma
	}
	end(len(data))
	return ends, total
}
