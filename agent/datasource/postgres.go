package datasource

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// postgres is a PostgreSQL source: a small pool of connections, each
// query in BEGIN READ ONLY with the limits set LOCAL, rolled back, and
// the session reset (DISCARD ALL) after it.
type postgres struct {
	pool  *pgxpool.Pool
	types *pgtype.Map
}

// postgresConns bounds the connections of one source.
const postgresConns = 4

func newPostgres(raw string, connect time.Duration) (engine, error) {
	cfg, err := pgxpool.ParseConfig(raw)
	if err != nil {
		return nil, fmt.Errorf("invalid PostgreSQL URL: %v", err)
	}
	cfg.MaxConns = postgresConns
	cfg.ConnConfig.ConnectTimeout = connect
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "sandpiper"
	// A cancelled context (the user stopped the answer, the time is up,
	// a limit was reached) sends a cancel request, so the statement stops
	// on the server too, not just in this process; a second later the
	// connection is dropped if the server has not answered.
	cfg.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: time.Second}
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("invalid PostgreSQL URL: %v", err)
	}
	return &postgres{pool: pool, types: pgtype.NewMap()}, nil
}

func (p *postgres) name() string { return "PostgreSQL" }
func (p *postgres) close()       { p.pool.Close() }

func (p *postgres) quote(ident string) string {
	// Tables are listed schema-qualified when not in search_path's
	// first schema: "sales.orders".
	var parts []string
	for _, s := range strings.Split(ident, ".") {
		parts = append(parts, `"`+strings.ReplaceAll(s, `"`, `""`)+`"`)
	}
	return strings.Join(parts, ".")
}

// begin is sent before every statement: a read-only transaction whose
// settings all end with it.
func postgresBegin(timeout time.Duration) string {
	ms := timeout.Milliseconds()
	return fmt.Sprintf("BEGIN TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY; "+
		"SET LOCAL statement_timeout = %d; SET LOCAL lock_timeout = %d; SET LOCAL idle_in_transaction_session_timeout = %d; "+
		"SET LOCAL TimeZone = 'UTC'; SET LOCAL DateStyle = 'ISO, YMD'; SET LOCAL IntervalStyle = 'iso_8601'; SET LOCAL extra_float_digits = 1",
		ms, min(ms, 5000), ms+5000)
}

func (p *postgres) query(ctx context.Context, sql string, lim Limits, s *sink) error {
	conn, err := p.pool.Acquire(ctx)
	if err != nil {
		return pgUnavailable(ctx, err)
	}
	pc := conn.Conn().PgConn()
	ok := false
	defer func() {
		if !ok {
			// In an unknown state: not back to the pool.
			conn.Hijack().Close(context.Background())
			return
		}
		conn.Release()
	}()
	if _, err := pc.Exec(ctx, postgresBegin(lim.Timeout)).ReadAll(); err != nil {
		return pgUnavailable(ctx, err)
	}
	qctx, cancel := context.WithCancel(ctx)
	qerr := p.read(qctx, cancel, pc, sql, s)
	cancel()
	// Always rolled back, then the session reset: nothing a statement
	// did outlives it (settings, advisory locks, prepared statements).
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer rcancel()
	if _, err := pc.Exec(rctx, "ROLLBACK").ReadAll(); err == nil {
		if _, err := pc.Exec(rctx, "DISCARD ALL").ReadAll(); err == nil && pc.TxStatus() == 'I' {
			ok = true
		}
	}
	return queryEnded(ctx, qerr)
}

// read runs sql with the extended protocol, which takes one statement
// only, asking for every column as text, as PostgreSQL writes it.
func (p *postgres) read(ctx context.Context, cancel func(), pc *pgconn.PgConn, sql string, s *sink) error {
	rr := pc.ExecParams(ctx, sql, nil, nil, nil, nil)
	fields := rr.FieldDescriptions()
	cols := make([]column, len(fields))
	bools := make([]bool, len(fields))
	for i, f := range fields {
		cols[i] = column{Name: f.Name, Type: p.typeName(f.DataTypeOID), Kind: postgresKind(f.DataTypeOID)}
		bools[i] = f.DataTypeOID == pgtype.BoolOID
	}
	if len(fields) > 0 {
		s.columns(cols)
	}
	var stop error
	for rr.NextRow() {
		vals := rr.Values()
		for i, v := range vals {
			if bools[i] && len(v) == 1 {
				if v[0] == 't' {
					vals[i] = []byte("true")
				} else {
					vals[i] = []byte("false")
				}
			}
		}
		if err := s.row(vals); err != nil {
			stop = err
			break
		}
	}
	if stop != nil {
		cancel() // the rest stops on the server: a cancel request
		rr.Close()
		return stop
	}
	if _, err := rr.Close(); err != nil {
		return pgError(err)
	}
	if len(fields) == 0 {
		return &dbError{msg: "the statement returned no rows and no columns: send one SELECT (or another statement that returns rows)"}
	}
	return nil
}

func (p *postgres) typeName(oid uint32) string {
	if t, ok := p.types.TypeForOID(oid); ok {
		return t.Name
	}
	return fmt.Sprintf("oid %d", oid)
}

// postgresKind is how a column of that type reads back from CSV.
func postgresKind(oid uint32) Kind {
	switch oid {
	case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID, pgtype.OIDOID:
		return KindInt
	case pgtype.Float4OID, pgtype.Float8OID:
		return KindFloat
	case pgtype.NumericOID:
		return KindDecimal
	case pgtype.BoolOID:
		return KindBool
	case pgtype.DateOID:
		return KindDate
	case pgtype.TimestampOID, pgtype.TimestamptzOID:
		return KindTimestamp
	case pgtype.ByteaOID:
		return KindBinary
	}
	return KindText
}

// pgError turns a failed statement into what the model reads.
func pgError(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		msg := pe.Severity + ": " + pe.Message
		if pe.Detail != "" {
			msg += " (" + pe.Detail + ")"
		}
		if pe.Hint != "" {
			msg += " Hint: " + pe.Hint
		}
		if pe.Position > 0 {
			msg += fmt.Sprintf(" [at character %d]", pe.Position)
		}
		msg += " (SQLSTATE " + pe.Code + ")"
		if pe.Severity == "FATAL" || pe.Severity == "PANIC" || strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "57P") {
			// The session ended: the server shut down, or an
			// administrator ended it.
			return &unavailableError{msg: "the connection to the database ended during the query: " + msg}
		}
		// 57014: query_canceled, which statement_timeout raises.
		return &dbError{msg: msg, timeout: pe.Code == "57014"}
	}
	return &unavailableError{msg: "the connection to the database failed during the query: " + err.Error()}
}

// pgUnavailable describes a failure to connect or to start.
func pgUnavailable(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return &unavailableError{msg: "the database refused the connection: " + pe.Message + " (SQLSTATE " + pe.Code + ")"}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &unavailableError{msg: "the database did not answer in time"}
	}
	return &unavailableError{msg: "the database cannot be reached: " + err.Error()}
}

func (p *postgres) tables(ctx context.Context) ([]Table, error) {
	rows, err := simple(ctx, p, `
SELECT CASE WHEN n.nspname = current_schema() THEN c.relname ELSE n.nspname || '.' || c.relname END,
       CASE c.relkind WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'f' THEN 'foreign table' ELSE 'table' END,
       coalesce(obj_description(c.oid, 'pg_class'), ''),
       CASE WHEN c.reltuples < 0 THEN -1 ELSE c.reltuples::bigint END,
       a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull, coalesce(col_description(c.oid, a.attnum), '')
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%' AND n.nspname NOT LIKE 'pg_temp%'
  AND has_table_privilege(c.oid, 'SELECT')
ORDER BY 1, a.attnum`)
	if err != nil {
		return nil, err
	}
	return tablesFromRows(rows), nil
}

func (p *postgres) check(ctx context.Context) (refuse, warn []string, err error) {
	rows, err := simple(ctx, p, `
SELECT r.rolsuper, pg_has_role(current_user, 'pg_execute_server_program', 'USAGE'),
       pg_has_role(current_user, 'pg_write_server_files', 'USAGE'),
       EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
                 AND has_table_privilege(c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE')),
       has_database_privilege(current_database(), 'CREATE') OR EXISTS (
               SELECT 1 FROM pg_namespace n WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
                 AND n.nspname NOT LIKE 'pg_%' AND has_schema_privilege(n.oid, 'CREATE'))
FROM pg_roles r WHERE r.rolname = current_user`)
	if err != nil {
		return nil, nil, err
	}
	if len(rows) != 1 || len(rows[0]) != 5 {
		return nil, nil, errors.New("could not read the role's privileges")
	}
	r := rows[0]
	if r[0] == "true" {
		refuse = append(refuse, "is a superuser")
	}
	if r[1] == "true" {
		refuse = append(refuse, "may run programs on the server (pg_execute_server_program)")
	}
	if r[2] == "true" {
		refuse = append(refuse, "may write files on the server (pg_write_server_files)")
	}
	if r[3] == "true" {
		warn = append(warn, "may write to tables")
	}
	if r[4] == "true" {
		warn = append(warn, "may create tables")
	}
	return refuse, warn, nil
}
