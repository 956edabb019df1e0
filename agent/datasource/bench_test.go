package datasource_test

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/agent/datasource"
	"github.com/sandpiper-bot/sandpiper/agent/datasource/dbtest"
	"github.com/sandpiper-bot/sandpiper/sandbox"
	"github.com/sandpiper-bot/sandpiper/sandbox/local"
)

// benchPostgres starts a server with a table of n rows and returns a
// reader's URL.
func benchPostgres(b *testing.B, n int) string {
	srv := dbtest.Postgres(b)
	srv.ExecPostgres(b, "postgres",
		"CREATE ROLE reader LOGIN PASSWORD 'reader-pw'",
		"GRANT pg_read_all_data TO reader",
	)
	srv.ExecPostgres(b, "postgres",
		"CREATE TABLE orders (id bigint, region text, amount numeric(12,2))",
		"INSERT INTO orders SELECT i, (ARRAY['north','south','east','west'])[1 + i % 4], (i % 1000) / 10.0 FROM generate_series(1, "+itoa(n)+") i",
		"ANALYZE orders",
	)
	return srv.PostgresURL("reader", "reader-pw", "postgres")
}

func itoa(n int) string { return strconv.Itoa(n) }

// BenchmarkAggregateMillionRows answers "total amount by region" over a
// million rows two ways, in one run: in the database through runSQL, and
// by exporting the table through runSQL to CSV and aggregating it with
// pandas in the sandbox.
//
//	go test -run '^$' -bench BenchmarkAggregateMillionRows -benchtime 3x ./agent/datasource/
func BenchmarkAggregateMillionRows(b *testing.B) {
	url := benchPostgres(b, 1_000_000)
	set, err := datasource.Open([]datasource.Config{{Name: "shop", URL: url}},
		datasource.Options{Limits: datasource.Limits{Timeout: time.Minute, Rows: 2_000_000, Bytes: 256 << 20}})
	if err != nil {
		b.Fatal(err)
	}
	defer set.Close()
	ctx := granted(context.Background(), "shop")

	b.Run("in-database", func(b *testing.B) {
		for b.Loop() {
			_, q, err := set.Query(ctx, nil, "shop", "SELECT region, sum(amount) FROM orders GROUP BY region", "")
			if err != nil || q.Outcome != "ok" || q.Rows != 4 {
				b.Fatalf("%+v, %v", q, err)
			}
		}
	})
	b.Run("export-then-pandas", func(b *testing.B) {
		if _, err := os.Stat("/usr/bin/python3"); err != nil {
			b.Skip("no /usr/bin/python3")
		}
		sb, err := local.New(context.Background(), local.Config{Python: "/usr/bin/python3", Logger: slog.New(slog.DiscardHandler),
			Limits: sandbox.Limits{Timeout: 2 * time.Minute, Memory: 2 << 30, DiskSize: 512 << 20}})
		if err != nil {
			b.Skipf("no local sandbox: %v", err)
		}
		defer sb.Close()
		for b.Loop() {
			ws := agent.NewMemWorkspace(nil, 0)
			_, q, err := set.Query(ctx, ws, "shop", "SELECT * FROM orders", "orders")
			if err != nil || q.Outcome != "ok" || q.Rows != 1_000_000 {
				b.Fatalf("%+v, %v", q, err)
			}
			files, _ := ws.Files(ctx)
			res, err := sb.Run(ctx, sandbox.Request{Files: files,
				Limits: sandbox.Limits{Timeout: 2 * time.Minute, Memory: 2 << 30, DiskSize: 512 << 20},
				Code:   "import pandas as pd\nprint(pd.read_csv('orders.csv').groupby('region').amount.sum())"})
			if err != nil || res.ExitCode != 0 || !strings.Contains(string(res.Stdout), "north") {
				b.Fatalf("%v: %s %s", err, res.Stdout, res.Stderr)
			}
		}
	})
}

// BenchmarkOneRowOverhead runs a one-row query through runSQL (read-only
// transaction, limits, rollback, session reset, CSV, preview, audit,
// metrics) and, as the baseline, with the bare driver on one connection.
//
//	go test -run '^$' -bench BenchmarkOneRowOverhead ./agent/datasource/
func BenchmarkOneRowOverhead(b *testing.B) {
	url := benchPostgres(b, 10)
	b.Run("bare-pgx", func(b *testing.B) {
		conn, err := pgx.Connect(context.Background(), url)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close(context.Background())
		for b.Loop() {
			var n int64
			if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM orders").Scan(&n); err != nil || n != 10 {
				b.Fatal(n, err)
			}
		}
	})
	b.Run("runSQL", func(b *testing.B) {
		set, err := datasource.Open([]datasource.Config{{Name: "shop", URL: url}}, datasource.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer set.Close()
		ctx := granted(context.Background(), "shop")
		ws := agent.NewMemWorkspace(nil, 0)
		for b.Loop() {
			_, q, err := set.Query(ctx, ws, "shop", "SELECT count(*) FROM orders", "")
			if err != nil || q.Outcome != "ok" {
				b.Fatal(q, err)
			}
		}
	})
}
