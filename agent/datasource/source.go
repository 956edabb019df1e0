package datasource

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/patrickmn/go-cache"
	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of [Limits] and [Options].
const (
	DefaultTimeout   = 30 * time.Second
	DefaultMaxRows   = 100_000
	DefaultMaxBytes  = 64 << 20
	DefaultSchemaTTL = 5 * time.Minute
)

// Limits bound one query. Zero fields take the defaults.
type Limits struct {
	// Timeout bounds the statement on the server (statement_timeout,
	// max_statement_time) and the call as a whole.
	Timeout time.Duration
	// Rows and Bytes bound the result kept: past them the query is
	// cancelled on the server and the result says it was cut.
	Rows  int
	Bytes int64
}

// WithDefaults fills the zero fields.
func (l Limits) WithDefaults() Limits {
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	if l.Rows <= 0 {
		l.Rows = DefaultMaxRows
	}
	if l.Bytes <= 0 {
		l.Bytes = DefaultMaxBytes
	}
	return l
}

// Config is one source as the operator configured it.
type Config struct {
	// Name is what the model and the admins call it: lower-case letters,
	// digits and underscores, starting with a letter (see [ValidName]).
	Name string
	// URL says where it is, with its credentials: postgres://…,
	// postgresql://…, mysql://… or mariadb://… (user:password@host:port/db),
	// or sqlite:PATH (also sqlite:///abs/path, or a bare path ending in
	// .db, .sqlite or .sqlite3). It is a secret: it is never logged or
	// shown.
	URL string
	// Privileged lets a role that could write outside the database's
	// transactions (a superuser, a PostgreSQL role that may run server
	// programs or write server files, a MySQL user with FILE or SUPER)
	// be used. Off, such a source is refused.
	Privileged bool
}

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)

// ValidName reports whether name can name a source.
func ValidName(name string) bool { return nameRE.MatchString(name) }

// Options configure [Open].
type Options struct {
	Limits Limits
	// SchemaTTL is how long a source's tables are kept before they are
	// read again (default DefaultSchemaTTL).
	SchemaTTL time.Duration
	// Logger gets the audit line of every query (who, where, which
	// source, rows, duration, outcome; the SQL at debug level) and the
	// sources' troubles.
	Logger *slog.Logger
	// Registerer, when set, gets the metrics sandpiper_queries_total and
	// sandpiper_query_seconds.
	Registerer prometheus.Registerer
	// ConnectTimeout bounds connecting to a source (default 10s).
	ConnectTimeout time.Duration
}

// engine is a database behind a source.
type engine interface {
	// name is the engine's name for people: PostgreSQL, MariaDB, …
	name() string
	// query runs one statement in a read-only transaction that is
	// always rolled back, within lim.Timeout on the server, and feeds
	// its result to s, which may stop it (errLimit). A database's
	// refusal is a *dbError; a failure to reach the database an
	// *unavailableError.
	query(ctx context.Context, sql string, lim Limits, s *sink) error
	// tables lists the tables and views the role can read, with their
	// columns.
	tables(ctx context.Context) ([]Table, error)
	// quote quotes an identifier (a table name from tables).
	quote(ident string) string
	// check returns what the role could do beyond reading: refuse are
	// reasons to refuse the source, warn reasons to warn about it.
	check(ctx context.Context) (refuse, warn []string, err error)
	close()
}

// cleanupTimeout bounds what an engine does after a statement, whatever
// became of it: the rollback, the session's reset, a KILL QUERY.
const cleanupTimeout = 5 * time.Second

// queryEnded is what an engine's query returns for its statement's
// error qerr: nil when a limit cut the result (the sink keeps what came),
// ctx's error when the caller stopped it, qerr otherwise.
func queryEnded(ctx context.Context, qerr error) error {
	switch {
	case errors.Is(qerr, errLimit):
		return nil
	case qerr != nil && ctx.Err() != nil:
		return ctx.Err()
	}
	return qerr
}

// queryColumns runs q on conn (the engines on database/sql) and returns
// its rows with their columns, typed by kind from their declared type in
// lower case; errs turns the driver's errors into ours. A statement that
// returns no columns is a *dbError.
func queryColumns(ctx context.Context, conn *sql.Conn, q string, kind func(string) Kind, errs func(error) error) (*sql.Rows, []column, error) {
	rows, err := conn.QueryContext(ctx, q)
	if err != nil {
		return nil, nil, errs(err)
	}
	types, err := rows.ColumnTypes()
	if err != nil {
		rows.Close()
		return nil, nil, errs(err)
	}
	if len(types) == 0 {
		rows.Close()
		return nil, nil, &dbError{msg: "the statement returned no rows and no columns: send one SELECT (or another statement that returns rows)"}
	}
	cols := make([]column, len(types))
	for i, t := range types {
		decl := strings.ToLower(t.DatabaseTypeName())
		cols[i] = column{Name: t.Name(), Type: decl, Kind: kind(decl)}
	}
	return rows, cols, nil
}

// simple runs a query of ours (not the model's: the schema, a health
// check) on e as the model's queries run, read-only, and returns its rows
// as text, within the default limits.
func simple(ctx context.Context, e engine, sql string) ([][]string, error) {
	lim := Limits{}.WithDefaults()
	s := newSink(lim)
	var rows [][]string
	s.keep = &rows
	if err := e.query(ctx, sql, lim, s); err != nil {
		return nil, err
	}
	return rows, nil
}

// dbError is a statement the database refused: the model can fix it.
type dbError struct {
	msg     string
	timeout bool // the statement ran out of time on the server
}

func (e *dbError) Error() string { return e.msg }

// unavailableError is a source that could not be reached.
type unavailableError struct{ msg string }

func (e *unavailableError) Error() string { return e.msg }

// Source is one configured source.
type Source struct {
	Name       string
	eng        engine
	redact     func(string) string
	privileged bool

	mu      sync.Mutex
	refused string // why the source is refused ("" when it is not)
	checked bool
}

// Engine names the source's database: PostgreSQL, MySQL, MariaDB (known
// once connected; MySQL before), SQLite; "" when its URL is bad.
func (s *Source) Engine() string {
	if s.eng == nil {
		return ""
	}
	return s.eng.name()
}

// Set is the configured sources. It is safe for concurrent use.
type Set struct {
	sources map[string]*Source
	names   []string
	lim     Limits
	log     *slog.Logger
	schemas *cache.Cache
	metrics *metrics
}

// Open builds the sources of cfgs. A source that is unreachable or badly
// configured does not stop it: that source is reported unavailable
// ([Set.Check], the log, and the model), and it tries again on each use.
// It fails only for a configuration error that concerns no single
// source (two sources of the same name). It does not connect: Check does,
// and every query.
func Open(cfgs []Config, opts Options) (*Set, error) {
	lim := opts.Limits.WithDefaults()
	ttl := opts.SchemaTTL
	if ttl <= 0 {
		ttl = DefaultSchemaTTL
	}
	connect := opts.ConnectTimeout
	if connect <= 0 {
		connect = 10 * time.Second
	}
	s := &Set{
		sources: map[string]*Source{},
		lim:     lim,
		log:     orDiscard(opts.Logger),
		schemas: cache.New(ttl, 2*ttl),
		metrics: newMetrics(opts.Registerer),
	}
	for _, c := range cfgs {
		if !ValidName(c.Name) {
			s.Close()
			return nil, fmt.Errorf("datasource: invalid source name %q: want lower-case letters, digits and _, starting with a letter, at most 40", c.Name)
		}
		if _, dup := s.sources[c.Name]; dup {
			s.Close()
			return nil, fmt.Errorf("datasource: two sources are named %q", c.Name)
		}
		src := &Source{Name: c.Name, privileged: c.Privileged, redact: redactor(c.URL)}
		eng, err := newEngine(c.URL, connect)
		if err != nil {
			src.refused = src.redact(err.Error())
			src.checked = true
			s.log.Warn("datasource: source not usable", "source", c.Name, "err", src.refused)
		} else {
			src.eng = eng
		}
		s.sources[c.Name] = src
		s.names = append(s.names, c.Name)
		s.metrics.init(c.Name)
	}
	slices.Sort(s.names)
	return s, nil
}

// newEngine picks the engine for url.
func newEngine(raw string, connect time.Duration) (engine, error) {
	scheme, _, ok := strings.Cut(raw, ":")
	if !ok {
		scheme = ""
	}
	switch strings.ToLower(scheme) {
	case "postgres", "postgresql":
		return newPostgres(raw, connect)
	case "mysql", "mariadb":
		return newMySQL(raw, connect)
	case "sqlite", "file":
		return newSQLite(raw)
	}
	lower := strings.ToLower(raw)
	if strings.HasSuffix(lower, ".db") || strings.HasSuffix(lower, ".sqlite") || strings.HasSuffix(lower, ".sqlite3") {
		return newSQLite(raw)
	}
	return nil, errors.New("unknown kind of source: want a URL starting postgres://, mysql://, mariadb:// or sqlite:, or the path of an SQLite file")
}

// Names returns the sources' names, sorted.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	return slices.Clone(s.names)
}

// Limits returns the limits every query runs within.
func (s *Set) Limits() Limits { return s.lim }

// Source returns the source of that name, or nil.
func (s *Set) Source(name string) *Source {
	if s == nil {
		return nil
	}
	return s.sources[name]
}

// Close closes the connections.
func (s *Set) Close() {
	if s == nil {
		return
	}
	for _, src := range s.sources {
		if src.eng != nil {
			src.eng.close()
		}
	}
}

// usable checks, once, that the source's role is not one to refuse; it
// returns why the source cannot be used now.
func (s *Set) usable(ctx context.Context, src *Source) error {
	src.mu.Lock()
	defer src.mu.Unlock()
	if src.refused != "" {
		return &unavailableError{msg: src.refused}
	}
	if src.checked {
		return nil
	}
	refuse, _, err := src.eng.check(ctx)
	if err != nil {
		return s.wrap(src, err) // not checked: next time again
	}
	src.checked = true
	if len(refuse) > 0 && !src.privileged {
		src.refused = fmt.Sprintf("refused: its database role %s; connect with a read-only role (see README), or allow it explicitly with SANDPIPER_SOURCES_PRIVILEGED=%s", strings.Join(refuse, " and "), src.Name)
		s.log.Error("datasource: source refused", "source", src.Name, "why", src.refused)
		return &unavailableError{msg: src.refused}
	}
	return nil
}

// wrap makes err safe to show: it holds no secret of the source, and
// says whether the source could not be reached.
func (s *Set) wrap(src *Source, err error) error {
	var db *dbError
	var un *unavailableError
	switch {
	case errors.As(err, &db):
		return &dbError{msg: src.redact(db.msg), timeout: db.timeout}
	case errors.As(err, &un):
		return &unavailableError{msg: src.redact(un.msg)}
	}
	return &unavailableError{msg: src.redact(err.Error())}
}

// Check is the result of checking one source, for `sandpiper doctor`.
type Check struct {
	Name   string // the source's name
	OK     bool
	Warn   bool // OK, but something to fix
	Detail string
}

// Check connects to every source, checks its role, and counts its
// tables, within ctx.
func (s *Set) Check(ctx context.Context) []Check {
	var out []Check
	for _, name := range s.Names() {
		src := s.sources[name]
		c := Check{Name: name}
		if src.eng == nil {
			c.Detail = src.refused
			out = append(out, c)
			continue
		}
		refuse, warn, err := src.eng.check(ctx)
		if err != nil {
			c.Detail = src.eng.name() + ": " + s.wrap(src, err).Error()
			out = append(out, c)
			continue
		}
		if len(refuse) > 0 && !src.privileged {
			c.Detail = fmt.Sprintf("%s: its role %s, so sandpiper refuses it; connect with a read-only role (see README), or allow it with SANDPIPER_SOURCES_PRIVILEGED=%s", src.eng.name(), strings.Join(refuse, " and "), name)
			out = append(out, c)
			continue
		}
		tables, err := src.eng.tables(ctx)
		if err != nil {
			c.Detail = src.eng.name() + ": listing its tables failed: " + s.wrap(src, err).Error()
			out = append(out, c)
			continue
		}
		c.OK = true
		c.Detail = fmt.Sprintf("%s, %d tables and views readable", src.eng.name(), len(tables))
		if len(refuse) > 0 {
			c.Warn = true
			c.Detail += fmt.Sprintf("; allowed by SANDPIPER_SOURCES_PRIVILEGED although its role %s", strings.Join(refuse, " and "))
		}
		if len(warn) > 0 {
			c.Warn = true
			c.Detail += fmt.Sprintf("; its role %s: every query runs in a read-only transaction, but a role that can only read is the safer wall (see README's recipe)", strings.Join(warn, " and "))
		}
		out = append(out, c)
	}
	return out
}

// redactor returns a function that removes the secrets of a source's URL
// from text: the password, the whole URL, and its user-information part.
func redactor(raw string) func(string) string {
	var secrets []string
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok && len(p) >= 3 {
			secrets = append(secrets, p, url.QueryEscape(p), url.PathEscape(p))
		}
	}
	for _, key := range []string{"password=", "sslpassword="} { // key=value URLs and query parameters
		for rest := raw; ; {
			i := strings.Index(strings.ToLower(rest), key)
			if i < 0 {
				break
			}
			rest = rest[i+len(key):]
			end := strings.IndexAny(rest, " &")
			if end < 0 {
				end = len(rest)
			}
			if v := rest[:end]; len(v) >= 3 {
				secrets = append(secrets, v)
			}
		}
	}
	if len(raw) > 0 {
		secrets = append(secrets, raw)
	}
	// The longest first, so a password inside the URL goes with the URL.
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	return func(s string) string {
		for _, sec := range secrets {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
		return s
	}
}

func orDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
