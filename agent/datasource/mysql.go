package datasource

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
)

// mysqlDB is a MySQL or MariaDB source: each query in START TRANSACTION
// READ ONLY with the server's statement time limit set for the session,
// rolled back; a stopped query is killed on the server (KILL QUERY).
type mysqlDB struct {
	db *sql.DB

	mariadb atomic.Bool // learnt at the first connection
}

func newMySQL(raw string, connect time.Duration) (engine, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, errors.New("invalid MySQL URL: want mysql://user:password@host:port/database")
	}
	cfg := mysql.NewConfig()
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	cfg.Net = "tcp"
	cfg.Addr = u.Host
	if u.Port() == "" {
		cfg.Addr = u.Host + ":3306"
	}
	if sock := u.Query().Get("socket"); sock != "" {
		cfg.Net, cfg.Addr = "unix", sock
	}
	cfg.DBName = strings.TrimPrefix(u.Path, "/")
	if tls := u.Query().Get("tls"); tls != "" {
		cfg.TLSConfig = tls
	}
	cfg.Timeout = connect
	cfg.MultiStatements = false // one statement per call
	cfg.ParseTime = false       // values as the server writes them
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("invalid MySQL URL: %v", err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(postgresConns + 1) // one more to kill a query
	db.SetMaxIdleConns(postgresConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	return &mysqlDB{db: db}, nil
}

func (m *mysqlDB) name() string {
	if m.mariadb.Load() {
		return "MariaDB"
	}
	return "MySQL"
}

func (m *mysqlDB) close() { m.db.Close() }

func (m *mysqlDB) quote(ident string) string {
	var parts []string
	for _, s := range strings.Split(ident, ".") {
		parts = append(parts, "`"+strings.ReplaceAll(s, "`", "``")+"`")
	}
	return strings.Join(parts, ".")
}

func (m *mysqlDB) query(ctx context.Context, q string, lim Limits, s *sink) error {
	conn, err := m.db.Conn(ctx)
	if err != nil {
		return myUnavailable(ctx, err)
	}
	ok := false
	defer func() {
		if !ok {
			conn.Raw(func(any) error { return driver.ErrBadConn }) // not back to the pool
		}
		conn.Close()
	}()
	var id int64
	var version string
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID(), VERSION()").Scan(&id, &version); err != nil {
		return myUnavailable(ctx, err)
	}
	m.mariadb.Store(strings.Contains(strings.ToLower(version), "mariadb"))
	limit := fmt.Sprintf("SET SESSION max_execution_time = %d", lim.Timeout.Milliseconds())
	if m.mariadb.Load() {
		limit = fmt.Sprintf("SET SESSION max_statement_time = %.3f", lim.Timeout.Seconds())
	}
	for _, stmt := range []string{limit, "SET SESSION time_zone = '+00:00'", "START TRANSACTION READ ONLY"} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return myUnavailable(ctx, err)
		}
	}
	// Stopped, timed out or cut at a limit, the statement is killed on
	// the server: the driver alone would only drop the connection.
	qctx, cancel := context.WithCancel(ctx)
	killed := make(chan struct{})
	stopKill := context.AfterFunc(qctx, func() {
		defer close(killed)
		kctx, kcancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer kcancel()
		m.db.ExecContext(kctx, fmt.Sprintf("KILL QUERY %d", id))
	})
	qerr := m.read(qctx, cancel, conn, q, s)
	if !stopKill() {
		<-killed
	}
	cancel()
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer rcancel()
	if _, err := conn.ExecContext(rctx, "ROLLBACK"); err == nil {
		if _, err := conn.ExecContext(rctx, "DO RELEASE_ALL_LOCKS()"); err == nil {
			ok = true
		}
	}
	return queryEnded(ctx, qerr)
}

func (m *mysqlDB) read(ctx context.Context, cancel func(), conn *sql.Conn, q string, s *sink) error {
	rows, cols, err := queryColumns(ctx, conn, q, mysqlKind, myError)
	if err != nil {
		return err
	}
	defer rows.Close()
	binary := make([]bool, len(cols))
	for i, c := range cols {
		binary[i] = c.Kind == KindBinary
	}
	s.columns(cols)
	raw := make([]sql.RawBytes, len(cols))
	dest := make([]any, len(cols))
	for i := range raw {
		dest[i] = &raw[i]
	}
	cells := make([][]byte, len(cols))
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return myError(err)
		}
		for i, v := range raw {
			switch {
			case v == nil:
				cells[i] = nil
			case binary[i]:
				cells[i] = hexBytes(v)
			default:
				cells[i] = validText(v)
			}
		}
		if err := s.row(cells); err != nil {
			cancel()
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return myError(err)
	}
	return nil
}

func mysqlKind(t string) Kind {
	switch strings.TrimPrefix(t, "unsigned ") {
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint", "year":
		return KindInt
	case "float", "double", "real":
		return KindFloat
	case "decimal", "numeric":
		return KindDecimal
	case "date":
		return KindDate
	case "datetime", "timestamp":
		return KindTimestamp
	case "binary", "varbinary", "blob", "tinyblob", "mediumblob", "longblob", "bit", "geometry":
		return KindBinary
	}
	return KindText
}

func myError(err error) error {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		// 1969 (MariaDB) and 3024 (MySQL): the statement time limit.
		return &dbError{msg: fmt.Sprintf("Error %d (%s): %s", me.Number, string(me.SQLState[:]), me.Message), timeout: me.Number == 1969 || me.Number == 3024}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &unavailableError{msg: "the connection to the database failed during the query: " + err.Error()}
}

func myUnavailable(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return &unavailableError{msg: fmt.Sprintf("the database refused the connection: Error %d: %s", me.Number, me.Message)}
	}
	return &unavailableError{msg: "the database cannot be reached: " + err.Error()}
}

func (m *mysqlDB) tables(ctx context.Context) ([]Table, error) {
	rows, err := simple(ctx, m, `
SELECT CASE WHEN t.TABLE_SCHEMA = DATABASE() THEN t.TABLE_NAME ELSE CONCAT(t.TABLE_SCHEMA, '.', t.TABLE_NAME) END,
       CASE t.TABLE_TYPE WHEN 'VIEW' THEN 'view' ELSE 'table' END,
       COALESCE(t.TABLE_COMMENT, ''), COALESCE(t.TABLE_ROWS, -1),
       c.COLUMN_NAME, c.COLUMN_TYPE, c.IS_NULLABLE, COALESCE(c.COLUMN_COMMENT, '')
FROM information_schema.TABLES t
JOIN information_schema.COLUMNS c ON c.TABLE_SCHEMA = t.TABLE_SCHEMA AND c.TABLE_NAME = t.TABLE_NAME
WHERE t.TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys') AND t.TABLE_TYPE IN ('BASE TABLE', 'VIEW', 'SYSTEM VERSIONED')
ORDER BY t.TABLE_SCHEMA <> DATABASE(), 1, c.ORDINAL_POSITION`)
	if err != nil {
		return nil, err
	}
	return tablesFromRows(rows), nil
}

func (m *mysqlDB) check(ctx context.Context) (refuse, warn []string, err error) {
	rows, err := simple(ctx, m, `
SELECT DISTINCT PRIVILEGE_TYPE FROM (
  SELECT GRANTEE, PRIVILEGE_TYPE FROM information_schema.USER_PRIVILEGES
  UNION ALL SELECT GRANTEE, PRIVILEGE_TYPE FROM information_schema.SCHEMA_PRIVILEGES
  UNION ALL SELECT GRANTEE, PRIVILEGE_TYPE FROM information_schema.TABLE_PRIVILEGES
) p WHERE GRANTEE = CONCAT('''', SUBSTRING_INDEX(CURRENT_USER(), '@', 1), '''@''', SUBSTRING_INDEX(CURRENT_USER(), '@', -1), '''')`)
	if err != nil {
		return nil, nil, err
	}
	has := map[string]bool{}
	for _, r := range rows {
		has[strings.ToUpper(r[0])] = true
	}
	if has["SUPER"] {
		refuse = append(refuse, "has SUPER")
	}
	if has["FILE"] {
		refuse = append(refuse, "may write files on the server (FILE)")
	}
	if has["INSERT"] || has["UPDATE"] || has["DELETE"] {
		warn = append(warn, "may write to tables")
	}
	if has["CREATE"] || has["DROP"] || has["ALTER"] {
		warn = append(warn, "may create or drop tables")
	}
	return refuse, warn, nil
}
