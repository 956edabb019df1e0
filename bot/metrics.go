package bot

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
)

// metrics are the bot's counters and latencies, served in Prometheus'
// text format on /metrics.
type metrics struct {
	questions     counter
	duplicates    counter
	connects      counter
	toolRuns      *labeled
	files         *labeled
	errors        *labeled
	caps          *labeled // caps and limits that fired, by sandbox.Cap
	ackSeconds    *histogram
	answerSeconds *histogram
	runSeconds    *histogram
}

func newMetrics() *metrics {
	return &metrics{
		toolRuns:      &labeled{label: "result"},
		files:         &labeled{label: "event"},
		errors:        &labeled{label: "kind"},
		caps:          &labeled{label: "cap"},
		ackSeconds:    newHistogram(0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1),
		answerSeconds: newHistogram(1, 2, 5, 10, 20, 30, 60, 120, 300),
		runSeconds:    newHistogram(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60),
	}
}

type counter struct{ n atomic.Int64 }

func (c *counter) inc() { c.n.Add(1) }

type labeled struct {
	label string
	mu    sync.Mutex
	m     map[string]int64
}

func (l *labeled) inc(value string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]int64{}
	}
	l.m[value]++
}

type histogram struct {
	mu     sync.Mutex
	bounds []float64
	counts []int64
	sum    float64
	n      int64
}

func newHistogram(bounds ...float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]int64, len(bounds))}
}

func (h *histogram) observe(v float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, b := range h.bounds {
		if v <= b {
			h.counts[i]++
		}
	}
	h.sum += v
	h.n++
}

func (m *metrics) write(w io.Writer, connected bool, busy int) {
	gauge := func(name, help string, v float64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s %g\n", name, help, name, name, v)
	}
	count := func(name, help string, v int64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", name, help, name, name, v)
	}
	lab := func(name, help string, l *labeled) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n", name, help, name)
		l.mu.Lock()
		keys := make([]string, 0, len(l.m))
		for k := range l.m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "%s{%s=%q} %d\n", name, l.label, k, l.m[k])
		}
		l.mu.Unlock()
	}
	hist := func(name, help string, h *histogram) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
		h.mu.Lock()
		for i, b := range h.bounds {
			fmt.Fprintf(w, "%s_bucket{le=%q} %d\n", name, fmt.Sprint(b), h.counts[i])
		}
		fmt.Fprintf(w, "%s_bucket{le=\"+Inf\"} %d\n%s_sum %g\n%s_count %d\n", name, h.n, name, h.sum, name, h.n)
		h.mu.Unlock()
	}
	up := 0.0
	if connected {
		up = 1
	}
	gauge("sandpiper_slack_connected", "Whether the Socket Mode connection is up.", up)
	gauge("sandpiper_jobs_in_flight", "Questions and commands waiting or being answered.", float64(busy))
	count("sandpiper_questions_total", "Questions taken up, follow-ups included.", m.questions.n.Load())
	count("sandpiper_duplicate_events_total", "Events dropped as redeliveries or duplicates.", m.duplicates.n.Load())
	count("sandpiper_slack_connections_total", "Socket Mode connections made.", m.connects.n.Load())
	lab("sandpiper_tool_runs_total", "executeCode runs by result.", m.toolRuns)
	lab("sandpiper_files_total", "Files downloaded from Slack, refused, posted to Slack, or not posted.", m.files)
	lab("sandpiper_errors_total", "Failures by kind.", m.errors)
	lab("sandpiper_caps_total", "Caps and limits that fired, by name: once per run each (output, result_list, memory, cpu_quota, socket_family, tool_result, timeout, cpu, processes, disk), and preview once per question put together.", m.caps)
	hist("sandpiper_ack_seconds", "Time from reading an envelope to writing its ack.", m.ackSeconds)
	hist("sandpiper_answer_seconds", "Time from taking a question to posting its answer.", m.answerSeconds)
	hist("sandpiper_tool_run_seconds", "Duration of executeCode runs.", m.runSeconds)
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
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		b.metrics.write(w, b.connected.Load(), b.pool.busy())
	})
	return mux
}
