package datasource_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/agent/datasource"
	"github.com/sandpiper-bot/sandpiper/agent/numcheck"
)

// TestAuditAndMetrics: every query writes one audit line (the SQL only
// at debug level) and counts in sandpiper_queries_total by outcome.
func TestAuditAndMetrics(t *testing.T) {
	path := newSQLite(t, "CREATE TABLE t (a INTEGER)", "INSERT INTO t VALUES (1), (2)")
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		t.Run(level.String(), func(t *testing.T) {
			var logs bytes.Buffer
			reg := prometheus.NewRegistry()
			set, err := datasource.Open([]datasource.Config{{Name: "s", URL: path}}, datasource.Options{
				Logger:     slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: level})),
				Registerer: reg,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer set.Close()
			query(t, set, nil, "s", "SELECT a FROM t")
			query(t, set, nil, "s", "SELECT nope FROM t")
			lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
			if len(lines) != 2 {
				t.Fatalf("%d log lines:\n%s", len(lines), &logs)
			}
			for _, want := range []string{"datasource: query", "user=U1", "channel=C1", "source=s", "rows=2", "outcome=ok"} {
				if !strings.Contains(lines[0], want) {
					t.Errorf("audit line lacks %s: %s", want, lines[0])
				}
			}
			if !strings.Contains(lines[1], "outcome=failed") || !strings.Contains(lines[1], "no such column: nope") {
				t.Errorf("second line: %s", lines[1])
			}
			if hasSQL := strings.Contains(logs.String(), `sql="SELECT a FROM t"`); hasSQL != (level == slog.LevelDebug) {
				t.Errorf("SQL logged at %s: %v", level, hasSQL)
			}
			// The bot registers the metrics in its own registry.
			bots := prometheus.NewRegistry()
			bots.MustRegister(set.Collector())
			if n, err := testutil.GatherAndCount(bots, "sandpiper_queries_total"); err != nil || n != len([]string{"ok", "truncated", "failed", "timeout", "unavailable", "canceled"}) {
				t.Errorf("the bot's registry has %d sandpiper_queries_total series, %v", n, err)
			}
			mf, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]float64{}
			for _, f := range mf {
				for _, m := range f.GetMetric() {
					key := f.GetName()
					for _, l := range m.GetLabel() {
						key += "," + l.GetName() + "=" + l.GetValue()
					}
					if m.Counter != nil {
						got[key] = m.Counter.GetValue()
					}
					if m.Histogram != nil {
						got[key] = float64(m.Histogram.GetSampleCount())
					}
				}
			}
			for key, want := range map[string]float64{
				"sandpiper_queries_total,result=ok,source=s":          1,
				"sandpiper_queries_total,result=failed,source=s":      1,
				"sandpiper_queries_total,result=timeout,source=s":     0,
				"sandpiper_queries_total,result=unavailable,source=s": 0,
				"sandpiper_query_seconds,source=s":                    2,
			} {
				if got[key] != want {
					t.Errorf("%s = %v, want %v", key, got[key], want)
				}
			}
		})
	}
}

// TestNumbersFromQueries: the number check accepts numbers an answer takes
// from a query's result as the model read it.
func TestNumbersFromQueries(t *testing.T) {
	path := newSQLite(t, "CREATE TABLE sales (region TEXT, total DECIMAL(12,2))",
		"INSERT INTO sales VALUES ('north', 1234567.5), ('south', 0.4375)")
	set := openSet(t, datasource.Limits{}, datasource.Config{Name: "s", URL: path})
	content, q, err := set.Query(granted(t.Context(), "s"), nil, "s", "SELECT region, total FROM sales", "")
	if err != nil {
		t.Fatal(err)
	}
	answer := "North sold $1,234,567.50 (about 1.23 million); south's share is 43.75%. Invented: 98.6."
	src := numcheck.Sources{Question: "Sales by region?", Runs: []numcheck.Run{{Code: q.SQL, Output: content}}}
	nums := numcheck.Check(answer, src)
	if len(nums) != 1 || nums[0].Text != "98.6" {
		t.Errorf("unverified %v, want only 98.6", nums)
	}
	_ = agent.QueryNull
}
