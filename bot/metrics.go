package bot

import (
	"io"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// metrics are the bot's counters and latencies. They live in a registry
// of the bot's own, with the Go runtime's and the process's metrics, and
// are served in Prometheus' text format on /metrics.
type metrics struct {
	reg           *prometheus.Registry
	questions     prometheus.Counter
	duplicates    prometheus.Counter
	connects      prometheus.Counter
	toolRuns      *prometheus.CounterVec // by result
	sandboxRuns   *prometheus.CounterVec // by start: warm or cold
	files         *prometheus.CounterVec // by event
	errors        *prometheus.CounterVec // by kind
	caps          *prometheus.CounterVec // caps and limits that fired, by sandbox.Cap
	ackSeconds    prometheus.Histogram
	answerSeconds prometheus.Histogram
	runSeconds    prometheus.Histogram
	feedback      *prometheus.CounterVec // clicks on answers' feedback buttons, by rating
	unverified    prometheus.Counter     // numbers the number check listed
}

// The label values each labelled counter starts at 0 with, so that a
// dashboard or an alert sees them before they first happen.
var (
	runResults = []string{"ok", "failed", "timeout", "oom", "sandbox_error"}
	runStarts  = []string{"warm", "cold"}
	fileEvents = []string{"downloaded", "refused", "posted", "not_posted"}
	errorKinds = []string{"shutdown", "timeout", "step_limit", "empty", "model", "slack", "busy", "feedback", "stopped", "lost"}
	capNames   = []sandbox.Cap{
		sandbox.CapOutput, sandbox.CapResultList, sandbox.CapMemory, sandbox.CapCPUQuota, sandbox.CapSocketFamily,
		sandbox.CapPreview, sandbox.CapToolResult,
		sandbox.Cap(sandbox.LimitTimeout), sandbox.Cap(sandbox.LimitCPU), sandbox.Cap(sandbox.LimitProcesses), sandbox.Cap(sandbox.LimitDisk),
	}
)

func newMetrics() *metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	f := promauto.With(reg)
	counter := func(name, help string) prometheus.Counter {
		return f.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	counters := func(name, help, label string, values ...string) *prometheus.CounterVec {
		c := f.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{label})
		for _, v := range values {
			c.WithLabelValues(v) // from 0
		}
		return c
	}
	histogram := func(name, help string, buckets ...float64) prometheus.Histogram {
		return f.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
	}
	caps := make([]string, len(capNames))
	for i, c := range capNames {
		caps[i] = string(c)
	}
	return &metrics{
		reg:           reg,
		questions:     counter("sandpiper_questions_total", "Questions taken up, follow-ups included."),
		duplicates:    counter("sandpiper_duplicate_events_total", "Events dropped as redeliveries or duplicates."),
		connects:      counter("sandpiper_slack_connections_total", "Socket Mode connections made."),
		toolRuns:      counters("sandpiper_tool_runs_total", "executeCode runs by result.", "result", runResults...),
		sandboxRuns:   counters("sandpiper_sandbox_runs_total", "Sandbox runs by how their interpreter started: warm (the preloaded modules already imported) or cold.", "start", runStarts...),
		files:         counters("sandpiper_files_total", "Files downloaded from Slack, refused, posted to Slack, or not posted.", "event", fileEvents...),
		errors:        counters("sandpiper_errors_total", "Failures by kind.", "kind", errorKinds...),
		caps:          counters("sandpiper_caps_total", "Caps and limits that fired, by name: once per run each (output, result_list, memory, cpu_quota, socket_family, tool_result, timeout, cpu, processes, disk), and preview once per question put together.", "cap", caps...),
		ackSeconds:    histogram("sandpiper_ack_seconds", "Time from reading an envelope to writing its ack.", 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1),
		answerSeconds: histogram("sandpiper_answer_seconds", "Time from taking a question to posting its answer.", 1, 2, 5, 10, 20, 30, 60, 120, 300),
		runSeconds:    histogram("sandpiper_tool_run_seconds", "Duration of executeCode runs.", 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60),
		feedback:      counters("sandpiper_feedback_total", "Clicks on answers' feedback buttons, by rating.", "rating", feedbackRatings...),
		unverified:    counter("sandpiper_numbers_unverified_total", "Numbers of answers found in no source of the conversation (runs' code and output, files, the question, earlier turns), listed under the answer by the number check."),
	}
}

// gauges registers the gauges read when /metrics is asked for.
func (m *metrics) gauges(connected func() bool, busy func() int) {
	f := promauto.With(m.reg)
	f.NewGaugeFunc(prometheus.GaugeOpts{Name: "sandpiper_slack_connected", Help: "Whether the Socket Mode connection is up."}, func() float64 {
		if connected() {
			return 1
		}
		return 0
	})
	f.NewGaugeFunc(prometheus.GaugeOpts{Name: "sandpiper_jobs_in_flight", Help: "Questions and commands waiting or being answered."}, func() float64 {
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
