package datasource

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"modernc.org/sqlite"
)

// sqliteDB is an SQLite file, opened read-only (mode=ro) with query_only
// on; each query runs in a transaction that is rolled back. A stopped
// query is interrupted (sqlite3_interrupt).
type sqliteDB struct {
	db   *sql.DB
	path string
}

func newSQLite(raw string) (engine, error) {
	path := raw
	switch {
	case strings.HasPrefix(raw, "sqlite://"):
		path = strings.TrimPrefix(raw, "sqlite://")
	case strings.HasPrefix(raw, "sqlite:"):
		path = strings.TrimPrefix(raw, "sqlite:")
	case strings.HasPrefix(raw, "file:"):
		path = strings.TrimPrefix(raw, "file:")
	}
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	if path == "" {
		return nil, errors.New("invalid SQLite source: no file path")
	}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Add("_pragma", "query_only(1)")
	q.Add("_pragma", "busy_timeout(5000)")
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("invalid SQLite source: %v", err)
	}
	db.SetMaxOpenConns(postgresConns)
	return &sqliteDB{db: db, path: path}, nil
}

func (d *sqliteDB) name() string { return "SQLite" }
func (d *sqliteDB) close()       { d.db.Close() }

func (d *sqliteDB) quote(ident string) string {
	return `"` + strings.ReplaceAll(ident, `"`, `""`) + `"`
}

func (d *sqliteDB) query(ctx context.Context, q string, lim Limits, s *sink) error {
	if _, err := os.Stat(d.path); err != nil {
		return &unavailableError{msg: "the database file cannot be read: " + err.Error()}
	}
	parent := ctx
	ctx, cancel := context.WithTimeoutCause(ctx, lim.Timeout, errSQLiteTimeout)
	defer cancel()
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return d.unavailable(ctx, err)
	}
	ok := false
	defer func() {
		if !ok {
			conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		conn.Close()
	}()
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		return d.unavailable(ctx, err)
	}
	qerr := d.read(ctx, conn, q, s)
	if _, err := conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK"); err == nil {
		ok = true
	}
	if qerr != nil && !errors.Is(qerr, errLimit) && parent.Err() == nil && context.Cause(ctx) == errSQLiteTimeout {
		return &dbError{msg: fmt.Sprintf("interrupted: the statement ran longer than the limit of %s", lim.Timeout), timeout: true}
	}
	return queryEnded(parent, qerr)
}

var errSQLiteTimeout = errors.New("the statement's time limit")

func (d *sqliteDB) read(ctx context.Context, conn *sql.Conn, q string, s *sink) error {
	if sqliteStatements(q) > 1 {
		// The driver would run them all; the file is read-only either way.
		return &dbError{msg: "SQLite: more than one statement: send one statement per call"}
	}
	rows, cols, err := queryColumns(ctx, conn, q, sqliteKind, sqliteError)
	if err != nil {
		return err
	}
	defer rows.Close()
	vals := make([]any, len(cols))
	dest := make([]any, len(cols))
	for i := range vals {
		dest[i] = &vals[i]
	}
	cells := make([][]byte, len(cols))
	first := true
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return sqliteError(err)
		}
		if first {
			// Expressions have no declared type: the first row's
			// values tell.
			for i, v := range vals {
				if cols[i].Type == "" {
					cols[i].Kind = valueKind(v)
				}
			}
			s.columns(cols)
			first = false
		}
		for i, v := range vals {
			cells[i] = sqliteText(v, cols[i].Kind)
		}
		if err := s.row(cells); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return sqliteError(err)
	}
	if first {
		s.columns(cols)
	}
	return nil
}

// sqliteKind follows SQLite's type affinity rules, with dates and
// booleans, which SQLite stores as numbers or text.
func sqliteKind(decl string) Kind {
	switch {
	case decl == "date":
		return KindDate
	case strings.Contains(decl, "datetime") || strings.Contains(decl, "timestamp"):
		return KindTimestamp
	case strings.Contains(decl, "bool"):
		return KindBool
	case strings.Contains(decl, "int"):
		return KindInt
	case strings.Contains(decl, "char") || strings.Contains(decl, "clob") || strings.Contains(decl, "text"):
		return KindText
	case strings.Contains(decl, "blob"):
		return KindBinary
	case strings.Contains(decl, "real") || strings.Contains(decl, "floa") || strings.Contains(decl, "doub"):
		return KindFloat
	case strings.Contains(decl, "dec") || strings.Contains(decl, "num"):
		return KindDecimal
	}
	return KindText
}

func valueKind(v any) Kind {
	switch v.(type) {
	case int64:
		return KindInt
	case float64:
		return KindFloat
	case []byte:
		return KindBinary
	case time.Time:
		return KindTimestamp
	}
	return KindText
}

func sqliteText(v any, k Kind) []byte {
	switch v := v.(type) {
	case nil:
		return nil
	case int64:
		if k == KindBool {
			return []byte(strconv.FormatBool(v != 0))
		}
		return strconv.AppendInt(nil, v, 10)
	case float64:
		return strconv.AppendFloat(nil, v, 'g', -1, 64)
	case string:
		return validText([]byte(v))
	case []byte:
		if k == KindBinary || k == KindText && !isText(v) {
			return hexBytes(v)
		}
		return validText(v)
	case bool:
		return []byte(strconv.FormatBool(v))
	case time.Time:
		if k == KindDate && v.Equal(v.Truncate(24*time.Hour)) {
			return []byte(v.Format(time.DateOnly))
		}
		return []byte(v.Format("2006-01-02 15:04:05.999999999Z07:00"))
	}
	return []byte(fmt.Sprint(v))
}

func isText(b []byte) bool {
	return !strings.ContainsRune(string(b), 0) && strings.ToValidUTF8(string(b), "\uFFFD") == string(b)
}

func sqliteError(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return &dbError{msg: "SQLite: " + se.Error()}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &dbError{msg: "SQLite: " + err.Error()}
}

func (d *sqliteDB) unavailable(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return &unavailableError{msg: "the database file cannot be opened: " + err.Error()}
}

func (d *sqliteDB) tables(ctx context.Context) ([]Table, error) {
	rows, err := simple(ctx, d, `
SELECT m.name, m.type, '', -1, p.name, p.type, CASE WHEN p."notnull" THEN 'false' ELSE 'true' END, ''
FROM sqlite_schema m JOIN pragma_table_info(m.name) p
WHERE m.type IN ('table', 'view') AND m.name NOT LIKE 'sqlite_%'
ORDER BY m.name, p.cid`)
	if err != nil {
		return nil, err
	}
	return tablesFromRows(rows), nil
}

// check: an SQLite file opened read-only has no role to check.
func (d *sqliteDB) check(ctx context.Context) (refuse, warn []string, err error) {
	_, err = simple(ctx, d, "SELECT 1")
	return nil, nil, err
}

// sqliteStatements counts the statements of q: the semicolons outside
// strings, quoted names and comments that something other than space
// and comments follows. It does not enforce anything (the file is opened
// read-only): the driver would run every statement, and a call runs one.
func sqliteStatements(q string) int {
	n, pending := 0, false
	for i := 0; i < len(q); i++ {
		switch c := q[i]; {
		case c == '\'' || c == '"' || c == '`' || c == '[':
			end := c
			if c == '[' {
				end = ']'
			}
			j := i + 1
			for ; j < len(q); j++ {
				if q[j] == end {
					if end != ']' && j+1 < len(q) && q[j+1] == end {
						j++ // a doubled quote
						continue
					}
					break
				}
			}
			i, pending = j, true
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			for i < len(q) && q[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				i = len(q)
			} else {
				i += end + 3
			}
		case c == ';':
			if pending {
				n++
			}
			pending = false
		case c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\f':
			pending = true
		}
	}
	if pending {
		n++
	}
	return n
}
