package bot

import (
	"io"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sandpiper-bot/sandpiper/bot/answer"
	"github.com/sandpiper-bot/sandpiper/bot/internal/metric"
)

// metrics are the bot's counters and latencies, and the answer path's
// ([answer.Metrics]). They live in a registry of the bot's own, with the
// Go runtime's and the process's metrics, and are served in Prometheus'
// text format on /metrics.
type metrics struct {
	reg        *prometheus.Registry
	answer     *answer.Metrics
	duplicates prometheus.Counter
	connects   prometheus.Counter
	errors     *prometheus.CounterVec // by kind, shared with the answer path
	ackSeconds prometheus.Histogram
	feedback   *prometheus.CounterVec // clicks on answers' feedback buttons, by rating
}

// errorKinds are the kinds of failure the bot counts outside answers, from
// 0 (so that a dashboard or an alert sees them before they first happen);
// [answer.NewMetrics] adds the answers'.
var errorKinds = []string{"busy", "feedback"}

func newMetrics() *metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	f := metric.With(reg)
	errors := f.Counters("sandpiper_errors_total", "Failures by kind.", "kind", errorKinds...)
	return &metrics{
		reg:        reg,
		answer:     answer.NewMetrics(reg, errors),
		duplicates: f.Counter("sandpiper_duplicate_events_total", "Events dropped as redeliveries or duplicates."),
		connects:   f.Counter("sandpiper_slack_connections_total", "Socket Mode connections made."),
		errors:     errors,
		ackSeconds: f.Histogram("sandpiper_ack_seconds", "Time from reading an envelope to writing its ack.", 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1),
		feedback:   f.Counters("sandpiper_feedback_total", "Clicks on answers' feedback buttons, by rating.", "rating", feedbackRatings...),
	}
}

// gauges registers the gauges read when /metrics is asked for.
func (m *metrics) gauges(connected func() bool, busy func() int) {
	f := metric.With(m.reg)
	f.GaugeFunc("sandpiper_slack_connected", "Whether the Socket Mode connection is up.", func() float64 {
		if connected() {
			return 1
		}
		return 0
	})
	f.GaugeFunc("sandpiper_jobs_in_flight", "Questions and commands waiting or being answered.", func() float64 {
		return float64(busy())
	})
}

// httpHandler serves /healthz, /readyz and /metrics.
func (b *Bot) httpHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if !b.connected.Load() {
			http.Error(w, "not connected to slack", http.StatusServiceUnavailable)
			return
		}
		if err := b.intake.ready(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok\n")
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(b.metrics.reg, promhttp.HandlerOpts{}))
	return mux
}
