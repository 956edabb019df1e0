package bot

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestMetrics: /metrics serves the bot's metrics and the answer path's
// (every cap and every kind of error from 0), and the Go runtime's and
// the process's.
func TestMetrics(t *testing.T) {
	b := &Bot{metrics: newMetrics(), pool: newDispatcher(1, 1)}
	b.connected.Store(true)
	b.metrics.gauges(b.connected.Load, b.pool.busy)
	scrape := func() string {
		t.Helper()
		w := httptest.NewRecorder()
		b.httpHandler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
		return w.Body.String()
	}
	for _, want := range []string{"# TYPE sandpiper_caps_total counter", `sandpiper_caps_total{cap="socket_family"} 0`,
		"sandpiper_slack_connected 1", "sandpiper_jobs_in_flight 0", `sandpiper_ack_seconds_bucket{le="0.0001"} 0`,
		`sandpiper_errors_total{kind="busy"} 0`, `sandpiper_errors_total{kind="model"} 0`,
		"go_goroutines ", "process_open_fds "} {
		if got := scrape(); !strings.Contains(got, want+"\n") && !strings.Contains(got, "\n"+want) {
			t.Errorf("/metrics lacks %q:\n%s", want, got)
		}
	}
}
