package datasource_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/agent/datasource"
	"github.com/sandpiper-bot/sandpiper/agent/datasource/dbtest"
)

// pgSetup makes database shop with a reader (pg_read_all_data), a writer
// (owns the tables) and a superuser; orders has 3 rows.
func pgSetup(t *testing.T, srv *dbtest.Server) {
	srv.ExecPostgres(t, "postgres",
		"CREATE ROLE writer LOGIN PASSWORD 'writer-pw'",
		"CREATE ROLE reader LOGIN PASSWORD 'reader-S3cret!pw'",
		"CREATE ROLE boss LOGIN SUPERUSER PASSWORD 'boss-pw'",
		"GRANT pg_read_all_data TO reader",
		"CREATE DATABASE shop OWNER writer",
	)
	srv.ExecPostgres(t, "shop",
		"SET ROLE writer",
		`CREATE TABLE orders (id bigint PRIMARY KEY, region text, amount numeric(30,10), placed date, at timestamptz,
			ok boolean, note text, raw bytea, ratio double precision)`,
		"COMMENT ON TABLE orders IS 'one row per order'",
		"COMMENT ON COLUMN orders.amount IS 'in euros'",
		`INSERT INTO orders VALUES
			(9223372036854775807, 'north', 12345678901234567890.0123456789, '2024-01-31', '2024-01-31 12:00:00.123456+02', true, 'Grüße, "quoted" 🐦', '\x00ff10', 0.1),
			(2, 'south', 7.25, '2024-02-29', NULL, false, '', NULL, 1e300),
			(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
		"CREATE SEQUENCE seq",
		"CREATE VIEW by_region AS SELECT region, sum(amount) AS total FROM orders GROUP BY region",
		`CREATE FUNCTION sneak() RETURNS int LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN INSERT INTO orders (id) VALUES (99); RETURN 1; END $$`,
		"GRANT EXECUTE ON FUNCTION sneak() TO reader",
	)
}

func TestPostgres(t *testing.T) {
	srv := dbtest.Postgres(t)
	pgSetup(t, srv)
	lim := datasource.Limits{Timeout: 2 * time.Second, Rows: 1000}
	set := openSet(t, lim,
		datasource.Config{Name: "shop", URL: srv.PostgresURL("reader", "reader-S3cret!pw", "shop")},
		datasource.Config{Name: "owner", URL: srv.PostgresURL("writer", "writer-pw", "shop")},
		datasource.Config{Name: "super", URL: srv.PostgresURL("boss", "boss-pw", "shop")},
		datasource.Config{Name: "wrongpw", URL: srv.PostgresURL("reader", "not-the-Pw-123", "shop")},
		datasource.Config{Name: "down", URL: fmt.Sprintf("postgres://reader:reader-S3cret!pw@127.0.0.1:%d/shop?sslmode=disable&connect_timeout=2", 1)},
	)
	ws := agent.NewMemWorkspace(nil, 0)
	count := func(t *testing.T) string {
		t.Helper()
		_, q := query(t, set, ws, "shop", "SELECT count(*), (SELECT last_value FROM seq) FROM orders")
		return q.Preview[0][0] + "/" + q.Preview[0][1]
	}

	t.Run("types survive", func(t *testing.T) {
		res, q := query(t, set, ws, "shop", "SELECT * FROM orders ORDER BY id")
		if q.Outcome != "ok" || q.Rows != 3 || q.Engine != "PostgreSQL" {
			t.Fatalf("query %+v, result %v", q, res)
		}
		want := "id,region,amount,placed,at,ok,note,raw,ratio\n" +
			"2,south,7.2500000000,2024-02-29,,false,\"\",,1e+300\n" +
			"3,,,,,,,,\n" +
			"9223372036854775807,north,12345678901234567890.0123456789,2024-01-31,2024-01-31 10:00:00.123456+00,true,\"Grüße, \"\"quoted\"\" 🐦\",\\x00ff10,0.1\n"
		if got := file(t, ws, q.File); got != want {
			t.Errorf("CSV:\n%s\nwant:\n%s", got, want)
		}
		if q.Columns[0].Type != "int8" || q.Columns[2].Type != "numeric" {
			t.Errorf("columns %+v", q.Columns)
		}
		read := res["read"].(string)
		for _, want := range []string{`'id': 'Int64'`, `'ok': 'boolean'`, `parse_dates=['placed', 'at']`} {
			if !strings.Contains(read, want) {
				t.Errorf("read hint %s lacks %s", read, want)
			}
		}
	})

	t.Run("writes refused", func(t *testing.T) {
		before := count(t)
		for _, stmt := range []string{
			"INSERT INTO orders (id) VALUES (10)",
			"UPDATE orders SET amount = 0",
			"DELETE FROM orders",
			"TRUNCATE orders",
			"CREATE TABLE t (a int)",
			"DROP TABLE orders",
			"SELECT * FROM orders FOR UPDATE",
			"SELECT nextval('seq')",
			"SELECT sneak()",
			"COPY orders TO PROGRAM 'touch /tmp/sandpiper-pwned'",
			"COPY (SELECT 1) TO '/tmp/sandpiper-pwned'",
			"SELECT 1; DELETE FROM orders",
			"COMMIT; DELETE FROM orders",
			"WITH d AS (DELETE FROM orders RETURNING *) SELECT * FROM d",
		} {
			res, q := query(t, set, ws, "shop", stmt)
			if q.Outcome != "failed" || res["error"] == nil {
				t.Errorf("%s: outcome %s, result %v", stmt, q.Outcome, res)
			}
		}
		// A setting changed by set_config ends with the transaction.
		query(t, set, ws, "shop", "SELECT set_config('search_path', 'nowhere', false)")
		for range 3 { // whichever connection of the pool comes next
			if _, q := query(t, set, ws, "shop", "SELECT current_setting('search_path')"); q.Preview[0][0] != `"$user", public` {
				t.Errorf("search_path is %q after set_config", q.Preview[0][0])
			}
		}
		// The owner of the tables cannot write either: the transaction
		// is read-only.
		if _, q := query(t, set, ws, "owner", "DELETE FROM orders"); q.Outcome != "failed" || !strings.Contains(q.Err, "read-only transaction") {
			t.Errorf("owner's delete: %+v", q)
		}
		if after := count(t); after != before {
			t.Errorf("the data changed: %s, then %s", before, after)
		}
	})

	t.Run("errors the model can fix", func(t *testing.T) {
		for stmt, want := range map[string]string{
			"SELEC 1":                 `syntax error at or near "SELEC"`,
			"SELECT * FROM nowhere":   `relation "nowhere" does not exist`,
			"SELECT nope FROM orders": `column "nope" does not exist`,
		} {
			res, q := query(t, set, ws, "shop", stmt)
			if q.Outcome != "failed" || !strings.Contains(res["error"].(string), want) {
				t.Errorf("%s: outcome %s, result %v", stmt, q.Outcome, res)
			}
		}
	})

	t.Run("privileged role refused", func(t *testing.T) {
		res, q := query(t, set, ws, "super", "SELECT 1")
		if q.Outcome != "unavailable" || !strings.Contains(res["error"].(string), "is a superuser") {
			t.Errorf("outcome %s, result %v", q.Outcome, res)
		}
	})

	t.Run("time limit cancels on the server", func(t *testing.T) {
		res, q := query(t, set, ws, "shop", "SELECT pg_sleep(30) /* sandpiper-sleep-1 */")
		if q.Outcome != "timeout" || !strings.Contains(res["error"].(string), "statement timeout") {
			t.Errorf("outcome %s, result %v", q.Outcome, res)
		}
		waitGone(t, srv, "sandpiper-sleep-1")
	})

	t.Run("stop cancels on the server", func(t *testing.T) {
		ctx, cancel := context.WithCancel(granted(t.Context(), "shop"))
		go func() {
			waitRunning(t, srv, "sandpiper-sleep-2")
			cancel()
		}()
		slow := openSet(t, datasource.Limits{Timeout: time.Minute}, datasource.Config{Name: "shop", URL: srv.PostgresURL("reader", "reader-S3cret!pw", "shop")})
		start := time.Now()
		_, q, err := slow.Query(ctx, ws, "shop", "SELECT pg_sleep(50) /* sandpiper-sleep-2 */", "")
		if err != context.Canceled || q.Outcome != "canceled" {
			t.Errorf("err %v, query %+v", err, q)
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("took %s", d)
		}
		waitGone(t, srv, "sandpiper-sleep-2")
	})

	t.Run("huge result truncated and stopped", func(t *testing.T) {
		res, q := query(t, set, ws, "shop", "SELECT generate_series(1, 1000000000) AS i /* sandpiper-big */")
		if q.Outcome != "truncated" || q.Rows != 1000 || !strings.Contains(res["truncated"].(string), "more than 1,000 rows") {
			t.Errorf("outcome %s rows %d, result %v", q.Outcome, q.Rows, res)
		}
		waitGone(t, srv, "sandpiper-big")
	})

	t.Run("secrets stay out", func(t *testing.T) {
		res, q := query(t, set, ws, "wrongpw", "SELECT 1")
		if q.Outcome != "unavailable" || strings.Contains(fmt.Sprint(res), "not-the-Pw-123") || !strings.Contains(q.Err, "password authentication failed") {
			t.Errorf("outcome %s, result %v", q.Outcome, res)
		}
		for _, c := range set.Check(t.Context()) {
			if strings.Contains(c.Detail, "S3cret") || strings.Contains(c.Detail, "not-the-Pw") {
				t.Errorf("check %s shows a password: %s", c.Name, c.Detail)
			}
		}
	})

	t.Run("down at start", func(t *testing.T) {
		res, q := query(t, set, ws, "down", "SELECT 1")
		if q.Outcome != "unavailable" || !strings.Contains(res["error"].(string), "source down is unavailable: the database cannot be reached") {
			t.Errorf("outcome %s, result %v", q.Outcome, res)
		}
	})

	t.Run("down mid-query", func(t *testing.T) {
		go func() {
			waitRunning(t, srv, "sandpiper-sleep-3")
			srv.ExecPostgres(t, "postgres", "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%sandpiper-sleep-3%' AND pid <> pg_backend_pid()")
		}()
		res, q := query(t, set, ws, "shop", "SELECT pg_sleep(1.5) /* sandpiper-sleep-3 */")
		if q.Outcome != "unavailable" || !strings.Contains(res["error"].(string), "source shop is unavailable") {
			t.Errorf("outcome %s, result %v", q.Outcome, res)
		}
		if _, q := query(t, set, ws, "shop", "SELECT 1"); q.Outcome != "ok" {
			t.Errorf("after: %+v", q)
		}
	})

	t.Run("doctor", func(t *testing.T) {
		got := map[string]datasource.Check{}
		for _, c := range set.Check(t.Context()) {
			got[c.Name] = c
		}
		if c := got["shop"]; !c.OK || c.Warn || !strings.Contains(c.Detail, "PostgreSQL, 2 tables and views readable") {
			t.Errorf("shop: %+v", c)
		}
		if c := got["owner"]; !c.OK || !c.Warn || !strings.Contains(c.Detail, "may write to tables") {
			t.Errorf("owner: %+v", c)
		}
		if c := got["super"]; c.OK || !strings.Contains(c.Detail, "superuser") {
			t.Errorf("super: %+v", c)
		}
		if c := got["down"]; c.OK {
			t.Errorf("down: %+v", c)
		}
	})

	t.Run("describe", func(t *testing.T) {
		text, err := set.Describe(granted(t.Context(), "shop"), "shop", "orders")
		if err != nil || !strings.Contains(text, "orders (table") || !strings.Contains(text, "one row per order") ||
			!strings.Contains(text, "amount numeric(30,10) -- in euros") || !strings.Contains(text, "Sample rows (3") {
			t.Errorf("%s, %v", text, err)
		}
	})
}

// activity returns the queries running with marker in them.
func activity(t *testing.T, srv *dbtest.Server, marker string) int {
	ctx := context.Background()
	c, err := pgx.Connect(ctx, srv.Admin)
	if err != nil {
		t.Error(err)
		return 0
	}
	defer c.Close(ctx)
	var n int
	c.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%'||$1||'%' AND pid <> pg_backend_pid()", marker).Scan(&n)
	return n
}

func waitRunning(t *testing.T, srv *dbtest.Server, marker string) {
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if activity(t, srv, marker) > 0 {
			return
		}
	}
	t.Errorf("%s never ran", marker)
}

// waitGone fails unless the query with marker is gone from
// pg_stat_activity within a few seconds (the cancel is asynchronous).
func waitGone(t *testing.T, srv *dbtest.Server, marker string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if activity(t, srv, marker) == 0 {
			return
		}
	}
	t.Errorf("%s still runs on the server", marker)
}
