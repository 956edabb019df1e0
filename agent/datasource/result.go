package datasource

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// Kind is what a column holds, as far as reading it back from CSV goes.
type Kind string

const (
	KindInt       Kind = "int"       // fits an int64
	KindFloat     Kind = "float"     // floating point
	KindDecimal   Kind = "decimal"   // exact decimal, written exactly
	KindBool      Kind = "bool"      // true or false
	KindText      Kind = "text"      // anything else, as text
	KindDate      Kind = "date"      // 2024-01-31
	KindTimestamp Kind = "timestamp" // 2024-01-31 12:00:00[.fraction][+zone]
	KindBinary    Kind = "binary"    // written as \x and hex digits
)

// column is a result's column.
type column struct {
	Name string
	Type string // the database's name for it
	Kind Kind
}

// errLimit stops reading a result at a limit; the engine then cancels
// the rest of the query on the server.
var errLimit = errors.New("datasource: result limit reached")

// sink collects a result: it writes every row as CSV, keeps the first
// rows for the preview, and stops at the limits.
type sink struct {
	lim     Limits
	cols    []column
	csv     bytes.Buffer
	preview [][]string // NULL as agent.QueryNull
	nulls   []bool     // per column: a NULL was seen
	rows    int64
	// truncated says which limit stopped the result ("" when complete).
	truncated string
	line      []byte
	// keep, when set, gets every row (for the queries of the package
	// itself: schemas, roles).
	keep *[][]string
}

// previewRows is how many rows the preview keeps (for the card; the
// model's share is cut further).
const previewRows = 20

func newSink(lim Limits) *sink { return &sink{lim: lim} }

// columns starts the result; it writes the CSV header.
func (s *sink) columns(cols []column) {
	s.cols = cols
	s.nulls = make([]bool, len(cols))
	s.line = s.line[:0]
	for i, c := range cols {
		s.line = appendField(s.line, i, []byte(c.Name), false)
	}
	s.line = append(s.line, '\n')
	s.csv.Write(s.line)
}

// row adds a row of cells as text (nil: NULL). It returns errLimit when
// the row would pass a limit: the row is not kept.
func (s *sink) row(cells [][]byte) error {
	if s.rows >= int64(s.lim.Rows) {
		s.truncated = fmt.Sprintf("more than %s rows (the limit)", commas(int64(s.lim.Rows)))
		return errLimit
	}
	s.line = s.line[:0]
	for i, c := range cells {
		s.line = appendField(s.line, i, c, c == nil)
		if c == nil && i < len(s.nulls) {
			s.nulls[i] = true
		}
	}
	s.line = append(s.line, '\n')
	if int64(s.csv.Len()+len(s.line)) > s.lim.Bytes {
		s.truncated = fmt.Sprintf("more than %s of CSV (the limit)", sandbox.FormatSize(s.lim.Bytes))
		return errLimit
	}
	s.csv.Write(s.line)
	if s.keep != nil {
		r := make([]string, len(cells))
		for i, c := range cells {
			r[i] = string(c)
		}
		*s.keep = append(*s.keep, r)
	}
	if len(s.preview) < previewRows {
		r := make([]string, len(cells))
		for i, c := range cells {
			if c == nil {
				r[i] = agent.QueryNull
			} else {
				r[i] = string(c)
			}
		}
		s.preview = append(s.preview, r)
	}
	s.rows++
	return nil
}

// appendField appends one CSV field (RFC 4180). NULL is an empty field;
// an empty string is "", so that the two stay apart for readers that
// tell them apart.
func appendField(b []byte, i int, v []byte, null bool) []byte {
	if i > 0 {
		b = append(b, ',')
	}
	if null {
		return b
	}
	if len(v) > 0 && !bytes.ContainsAny(v, ",\"\r\n") && v[0] != ' ' && v[len(v)-1] != ' ' {
		return append(b, v...)
	}
	b = append(b, '"')
	for _, c := range v {
		if c == '"' {
			b = append(b, '"')
		}
		b = append(b, c)
	}
	return append(b, '"')
}

// hexBytes writes binary as PostgreSQL does: \x and hex digits.
func hexBytes(v []byte) []byte {
	const digits = "0123456789abcdef"
	out := make([]byte, 2, 2+2*len(v))
	out[0], out[1] = '\\', 'x'
	for _, c := range v {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return out
}

// validText returns v, or its hex form when it is not UTF-8 (a binary
// value in a column typed as text).
func validText(v []byte) []byte {
	if utf8.Valid(v) {
		return v
	}
	return hexBytes(v)
}

// readHint is the pandas call that reads the result's file with its
// columns' kinds: nullable integers and booleans, exact decimals as
// text, dates and times parsed; decimals are read as floats (the
// file keeps every digit).
func readHint(path string, cols []column) string {
	var dtypes, dates []string
	for _, c := range cols {
		name := pyString(c.Name)
		switch c.Kind {
		case KindInt:
			dtypes = append(dtypes, name+": 'Int64'")
		case KindBool:
			dtypes = append(dtypes, name+": 'boolean'")
		case KindText, KindBinary:
			dtypes = append(dtypes, name+": 'string'")
		case KindDate, KindTimestamp:
			dates = append(dates, name)
		}
	}
	var b strings.Builder
	b.WriteString("pd.read_csv(" + pyString(path))
	if len(dtypes) > 0 {
		b.WriteString(", dtype={" + strings.Join(dtypes, ", ") + "}")
	}
	if len(dates) > 0 {
		b.WriteString(", parse_dates=[" + strings.Join(dates, ", ") + "]")
	}
	b.WriteString(", keep_default_na=False, na_values=[''])")
	return b.String()
}

// pyString quotes s as a Python string literal.
func pyString(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range s {
		switch {
		case r == '\'' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// commas writes n with thousands separators: 100,000.
func commas(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + commas(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
