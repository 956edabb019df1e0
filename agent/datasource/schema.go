package datasource

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Table is a table or view a source's role can read.
type Table struct {
	// Name is how the SQL names it: schema-qualified unless it is in the
	// default schema.
	Name    string
	Kind    string // table, view, materialized view, foreign table
	Comment string
	Rows    int64 // the database's estimate; -1 when it has none
	Columns []Column
}

// Column is a column of a Table.
type Column struct {
	Name     string
	Type     string
	Nullable bool
	Comment  string
}

// tablesFromRows reads rows of (table, kind, comment, row estimate,
// column, type, nullable, column comment), a row per column, grouped by
// table.
func tablesFromRows(rows [][]string) []Table {
	var out []Table
	for _, r := range rows {
		if len(r) < 8 {
			continue
		}
		if len(out) == 0 || out[len(out)-1].Name != r[0] {
			n, err := strconv.ParseInt(r[3], 10, 64)
			if err != nil {
				n = -1
			}
			out = append(out, Table{Name: r[0], Kind: r[1], Comment: r[2], Rows: n})
		}
		t := &out[len(out)-1]
		t.Columns = append(t.Columns, Column{Name: r[4], Type: r[5], Nullable: r[6] == "true" || r[6] == "1" || r[6] == "YES", Comment: r[7]})
	}
	return out
}

// schema returns the source's tables, from the cache when it has them.
func (s *Set) schema(ctx context.Context, src *Source) ([]Table, error) {
	if v, ok := s.schemas.Get(src.Name); ok {
		return v.([]Table), nil
	}
	if err := s.usable(ctx, src); err != nil {
		return nil, err
	}
	tables, err := src.eng.tables(ctx)
	if err != nil {
		return nil, s.wrap(src, err)
	}
	s.schemas.SetDefault(src.Name, tables)
	return tables, nil
}

// compact writes tables one a line: "orders (table, ~1,200 rows): id
// bigint, placed date, …". It returns false when that passes max bytes.
func compact(tables []Table, max int) (string, bool) {
	var b strings.Builder
	for _, t := range tables {
		b.WriteString("  - " + t.Name + " (" + t.Kind)
		if t.Rows >= 0 {
			b.WriteString(", ~" + commas(t.Rows) + " rows")
		}
		b.WriteString("): ")
		for i, c := range t.Columns {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(c.Name + " " + c.Type)
		}
		b.WriteString("\n")
		if b.Len() > max {
			return "", false
		}
	}
	return b.String(), true
}

// describeTable writes one table in detail.
func describeTable(t Table) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s", t.Name, t.Kind)
	if t.Rows >= 0 {
		fmt.Fprintf(&b, ", about %s rows", commas(t.Rows))
	}
	b.WriteString(")")
	if t.Comment != "" {
		b.WriteString(": " + t.Comment)
	}
	b.WriteString("\n")
	for _, c := range t.Columns {
		fmt.Fprintf(&b, "  %s %s", c.Name, c.Type)
		if !c.Nullable {
			b.WriteString(" not null")
		}
		if c.Comment != "" {
			b.WriteString(" -- " + c.Comment)
		}
		b.WriteString("\n")
	}
	return b.String()
}
