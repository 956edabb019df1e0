package answer

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// TestMetrics: the answer path's metrics start at 0 in the registry they
// are given, count the kinds of failure in the errors they share with
// the bot, and count each cap that fired.
func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sandpiper_errors_total", Help: "Failures by kind."}, []string{"kind"})
	reg.MustRegister(errs)
	errs.WithLabelValues("busy").Inc() // the bot's own
	m := NewMetrics(reg, errs)
	scrape := func() string {
		t.Helper()
		w := httptest.NewRecorder()
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
		return w.Body.String()
	}
	for _, want := range []string{`sandpiper_caps_total{cap="socket_family"} 0`, `sandpiper_tool_runs_total{result="oom"} 0`,
		`sandpiper_errors_total{kind="busy"} 1`, `sandpiper_errors_total{kind="step_limit"} 0`, "sandpiper_questions_total 0"} {
		if got := scrape(); !strings.Contains(got, want+"\n") {
			t.Errorf("/metrics lacks %q:\n%s", want, got)
		}
	}
	for _, c := range []sandbox.Cap{sandbox.CapOutput, sandbox.CapPreview, sandbox.CapOutput} {
		m.caps.WithLabelValues(string(c)).Inc()
	}
	got := scrape()
	for _, want := range []string{`sandpiper_caps_total{cap="output"} 2`, `sandpiper_caps_total{cap="preview"} 1`} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("/metrics lacks %s:\n%s", want, got)
		}
	}
}
