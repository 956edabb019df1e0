// Package datasource lets the agent read the team's databases: named
// sources (PostgreSQL through pgx, MySQL and MariaDB through
// go-sql-driver/mysql, SQLite files through the pure-Go modernc.org/sqlite)
// that the operator configures, and two tools for the model: describeData
// (tables and views, columns, types, comments, row estimates; one table in
// detail with a few sample rows) and runSQL (one statement on a source).
// Queries run here, in the bot's process: the sandbox stays offline and
// never sees a credential.
//
// # Grants
//
// A run may query the sources in [agent.RunOptions.Sources] and no other:
// the tools are [agent.RunTool]s, offered only in runs granted a source,
// and describeData's instructions list the granted sources (with their
// tables and columns when that fits in about 3 KiB, their table names
// otherwise; a source that cannot be reached is listed as unavailable).
// The terminal grants every configured source; the bot, those granted to
// the channel.
//
// # Read-only, by the database
//
// Nothing here parses SQL to decide what may run. Every statement runs in
// a read-only transaction that is always rolled back:
//
//   - PostgreSQL: BEGIN READ ONLY (repeatable read) with statement_timeout,
//     lock_timeout and idle_in_transaction_session_timeout set LOCAL,
//     then ROLLBACK and DISCARD ALL (session settings, advisory locks and
//     prepared statements end with the call). The statement goes through
//     the extended protocol, which takes one statement only, asking for
//     every column as text.
//   - MySQL/MariaDB: START TRANSACTION READ ONLY with max_execution_time
//     (MySQL) or max_statement_time (MariaDB) set for the session,
//     multiStatements off, then ROLLBACK and RELEASE_ALL_LOCKS(). DDL
//     commits implicitly in MySQL: there only a role that cannot create or
//     drop stops it, which doctor checks.
//   - SQLite: the file opened with mode=ro and query_only, each statement
//     in a transaction rolled back; the driver would run every statement of
//     a string, so a call with more than one is refused.
//
// A read-only transaction does not stop a privileged role (COPY … TO
// PROGRAM, writing server files, SELECT … INTO OUTFILE): a source whose
// role is a superuser, may run server programs or write server files
// (PostgreSQL), or has FILE or SUPER (MySQL) is refused unless
// [Config.Privileged] is set; [Set.Check] warns when the role could write.
//
// # Limits and cancelling
//
// [Limits] bound the time (on the server, and the call 5 s later), the
// rows and the bytes of CSV of a result; a result cut at a limit says so.
// A stopped run, a timeout or a limit reached cancels the statement on the
// server: PostgreSQL gets a cancel request (pgconn's
// CancelRequestContextWatcherHandler), MySQL a KILL QUERY from another
// connection, SQLite sqlite3_interrupt. A connection whose state is in
// doubt afterwards is closed, not reused.
//
// # Results
//
// The whole result goes into the run's [agent.Workspace] as CSV (named by
// the model, or query_ and a hash of the SQL), so executeCode reads it
// from /mnt/data, in this run and later ones. Values are written as the
// database writes them as text: big integers and decimals keep every
// digit, dates and times are ISO 8601 (PostgreSQL and MySQL sessions in
// UTC), booleans are true/false, binary values \x and hex digits, NULL an
// empty field and an empty string "". The model reads a bounded preview
// (columns and types, the row count, at most 10 rows of cells cut to 80
// characters, neutralised with safetext) and a pandas call that reads the
// file with the columns' types. Observers get the query as an
// [agent.Query] in [agent.ToolResultEvent.Query]: source, SQL, columns,
// first rows, row count, why it was cut, file, outcome, error, duration.
//
// # Secrets and failures
//
// A source's URL is a secret: errors pass through a redactor that removes
// its password and the URL itself before they reach a log, the model or a
// check. A statement the database refuses (a syntax error, an unknown
// table, a write) is a failed query the model can fix, not an error; a
// source that cannot be reached, or is refused, is "unavailable", with
// the reason, and is tried again on the next call.
//
// # Observability
//
// Every query writes one audit line ("datasource: query": user, channel,
// source, rows, duration, outcome; the SQL at debug level) and counts in
// sandpiper_queries_total{source,result} and sandpiper_query_seconds{source}
// ([Options.Registerer], or [Set.Collector] for a registry of the
// caller's).
//
// # Speed
//
// Measured on a shared 2-core machine (load average about 28), PostgreSQL
// 15 on loopback: a one-row query through runSQL takes 0.76 ms against
// 0.08 ms with the bare driver (BenchmarkOneRowOverhead: the transaction,
// rollback and session reset are three more round trips); totals by
// region over a million rows take 0.52 s aggregated in the database, and
// 10.5 s exported as CSV (24 MB) and aggregated with pandas in the
// sandbox (BenchmarkAggregateMillionRows). Hence the tool's advice to the
// model: aggregate in SQL.
//
// Tests run real servers: PostgreSQL and MariaDB from their Debian
// packages, started by package dbtest on free loopback ports.
package datasource
