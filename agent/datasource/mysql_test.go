package datasource_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/agent/datasource"
	"github.com/sandpiper-bot/sandpiper/agent/datasource/dbtest"
)

func TestMariaDB(t *testing.T) {
	srv := dbtest.MariaDB(t)
	srv.ExecMySQL(t,
		"CREATE DATABASE shop CHARACTER SET utf8mb4",
		`CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, region VARCHAR(20), amount DECIMAL(30,10), placed DATE, at DATETIME(6),
			note TEXT, raw VARBINARY(10), ratio DOUBLE) COMMENT 'one row per order'`,
		`INSERT INTO shop.orders VALUES
			(9223372036854775807, 'north', 12345678901234567890.0123456789, '2024-01-31', '2024-01-31 12:00:00.123456', 'Grüße, "quoted" 🐦', x'00ff10', 0.1),
			(2, 'south', 7.25, '2024-02-29', NULL, '', NULL, 1e300),
			(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
		"CREATE SEQUENCE shop.seq",
		"CREATE USER reader IDENTIFIED BY 'reader-S3cret!pw'",
		"GRANT SELECT ON shop.* TO reader",
		"CREATE USER writer IDENTIFIED BY 'writer-pw'",
		"GRANT ALL ON shop.* TO writer",
		"CREATE USER filer IDENTIFIED BY 'filer-pw'",
		"GRANT FILE ON *.* TO filer",
		"GRANT SELECT ON shop.* TO filer",
	)
	set := openSet(t, datasource.Limits{Timeout: 2 * time.Second, Rows: 1000},
		datasource.Config{Name: "shop", URL: srv.MySQLURL("reader", "reader-S3cret!pw", "shop")},
		datasource.Config{Name: "owner", URL: srv.MySQLURL("writer", "writer-pw", "shop")},
		datasource.Config{Name: "filer", URL: srv.MySQLURL("filer", "filer-pw", "shop")},
		datasource.Config{Name: "wrongpw", URL: srv.MySQLURL("reader", "not-the-Pw-123", "shop")},
	)
	ws := agent.NewMemWorkspace(nil, 0)

	t.Run("types survive", func(t *testing.T) {
		_, q := query(t, set, ws, "shop", "SELECT * FROM orders ORDER BY id")
		if q.Outcome != "ok" || q.Rows != 3 || q.Engine != "MariaDB" {
			t.Fatalf("query %+v", q)
		}
		want := "id,region,amount,placed,at,note,raw,ratio\n" +
			"2,south,7.2500000000,2024-02-29,,\"\",,1e+300\n" +
			"3,,,,,,,\n" +
			"9223372036854775807,north,12345678901234567890.0123456789,2024-01-31,2024-01-31 12:00:00.123456,\"Grüße, \"\"quoted\"\" 🐦\",\\x00ff10,0.1\n"
		if got := file(t, ws, q.File); got != want {
			t.Errorf("CSV:\n%s\nwant:\n%s", got, want)
		}
	})

	t.Run("writes refused", func(t *testing.T) {
		for _, name := range []string{"shop", "owner"} {
			for _, stmt := range []string{
				"INSERT INTO orders (id) VALUES (10)",
				"UPDATE orders SET amount = 0",
				"DELETE FROM orders",
				"SELECT NEXTVAL(seq)",
				"SELECT 1; DELETE FROM orders",
				"COMMIT",
			} {
				if res, q := query(t, set, ws, name, stmt); q.Outcome != "failed" {
					t.Errorf("%s: %s: outcome %s, result %v", name, stmt, q.Outcome, res)
				}
			}
			// DDL commits implicitly in MySQL: the read-only transaction
			// does not stop it, the role does.
			if name == "shop" {
				for _, stmt := range []string{"CREATE TABLE t (a INT)", "DROP TABLE orders", "TRUNCATE orders"} {
					if res, q := query(t, set, ws, name, stmt); q.Outcome != "failed" {
						t.Errorf("%s: %s: outcome %s, result %v", name, stmt, q.Outcome, res)
					}
				}
			}
		}
		_, q := query(t, set, ws, "shop", "SELECT count(*), sum(id = 10) FROM orders")
		if q.Preview[0][0] != "3" {
			t.Errorf("the data changed: %q", q.Preview)
		}
	})

	t.Run("errors the model can fix", func(t *testing.T) {
		res, q := query(t, set, ws, "shop", "SELECT * FROM nowhere")
		if q.Outcome != "failed" || !strings.Contains(res["error"].(string), "doesn't exist") {
			t.Errorf("outcome %s, result %v", q.Outcome, res)
		}
	})

	t.Run("FILE privilege refused", func(t *testing.T) {
		res, q := query(t, set, ws, "filer", "SELECT 1")
		if q.Outcome != "unavailable" || !strings.Contains(res["error"].(string), "FILE") {
			t.Errorf("outcome %s, result %v", q.Outcome, res)
		}
	})

	t.Run("time limit stops on the server", func(t *testing.T) {
		res, q := query(t, set, ws, "shop", "SELECT SLEEP(30), 'sandpiper-sleep-1'")
		// MariaDB's max_statement_time ends SLEEP early with 1 rather
		// than an error; either way the statement stops within the limit.
		if q.Outcome != "timeout" && !(q.Outcome == "ok" && q.Preview[0][0] == "1") {
			t.Errorf("outcome %s, result %v", q.Outcome, res)
		}
		mysqlWaitGone(t, srv, "sandpiper-sleep-1")
	})

	t.Run("stop kills on the server", func(t *testing.T) {
		ctx, cancel := context.WithCancel(granted(t.Context(), "shop"))
		slow := openSet(t, datasource.Limits{Timeout: time.Minute}, datasource.Config{Name: "shop", URL: srv.MySQLURL("reader", "reader-S3cret!pw", "shop")})
		go func() {
			time.Sleep(500 * time.Millisecond)
			cancel()
		}()
		_, q, err := slow.Query(ctx, ws, "shop", "SELECT SLEEP(50), 'sandpiper-sleep-2'", "")
		if err != context.Canceled || q.Outcome != "canceled" {
			t.Errorf("err %v, query %+v", err, q)
		}
		mysqlWaitGone(t, srv, "sandpiper-sleep-2")
	})

	t.Run("secrets stay out", func(t *testing.T) {
		res, q := query(t, set, ws, "wrongpw", "SELECT 1")
		if q.Outcome != "unavailable" || strings.Contains(q.Err, "not-the-Pw-123") || !strings.Contains(q.Err, "Access denied") {
			t.Errorf("outcome %s, result %v", q.Outcome, res)
		}
	})

	t.Run("doctor", func(t *testing.T) {
		got := map[string]datasource.Check{}
		for _, c := range set.Check(t.Context()) {
			got[c.Name] = c
		}
		if c := got["shop"]; !c.OK || c.Warn || !strings.Contains(c.Detail, "MariaDB, 1 tables and views readable") {
			t.Errorf("shop: %+v", c)
		}
		if c := got["owner"]; !c.OK || !c.Warn {
			t.Errorf("owner: %+v", c)
		}
		if c := got["filer"]; c.OK {
			t.Errorf("filer: %+v", c)
		}
	})
}

func mysqlWaitGone(t *testing.T, srv *dbtest.Server, marker string) {
	t.Helper()
	db, err := sql.Open("mysql", srv.Admin)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var n int
		db.QueryRow("SELECT count(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE ? AND ID <> CONNECTION_ID()", "%"+marker+"%").Scan(&n)
		if n == 0 {
			return
		}
	}
	t.Errorf("%s still runs on the server", marker)
}
