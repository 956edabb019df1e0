package kubernetes

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// metrics are the backend's own: how long claims take to be ready, how
// runs ended, and what became of the claims. [Sandbox] serves them as a
// [prometheus.Collector].
type metrics struct {
	claimSeconds prometheus.Histogram
	runs         *prometheus.CounterVec // by backend (kubernetes) and result
	claims       *prometheus.CounterVec // by event: created, cleaned, leaked
	held         prometheus.Gauge
}

// The label values the counters start at 0 with.
var (
	runResults  = []string{"ok", "failed", "timeout", "oom", "sandbox_error", "stopped"}
	claimEvents = []string{"created", "cleaned", "leaked"}
)

func newMetrics() *metrics {
	m := &metrics{
		claimSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sandpiper_kubernetes_claim_seconds",
			Help:    "Time from creating a SandboxClaim to its sandbox being ready.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120},
		}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandpiper_sandbox_backend_runs_total",
			Help: "Sandbox runs by backend and result (ok, failed, timeout, oom, sandbox_error, stopped).",
		}, []string{"backend", "result"}),
		claims: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandpiper_kubernetes_claims_total",
			Help: "SandboxClaims created, cleaned (deleted after their run) and leaked (not deleted: agent-sandbox deletes them at their shutdownTime).",
		}, []string{"event"}),
		held: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sandpiper_kubernetes_claims_held",
			Help: "SandboxClaims held by runs in flight.",
		}),
	}
	for _, r := range runResults {
		m.runs.WithLabelValues("kubernetes", r)
	}
	for _, e := range claimEvents {
		m.claims.WithLabelValues(e)
	}
	return m
}

// count counts a run by how it ended.
func (m *metrics) count(ctx context.Context, res *sandbox.Result, err error) {
	result := "ok"
	switch {
	case err != nil && ctx.Err() != nil:
		result = "stopped"
	case err != nil:
		result = "sandbox_error"
	case res.Limit == sandbox.LimitTimeout:
		result = "timeout"
	case res.Limit == sandbox.LimitMemory:
		result = "oom"
	case res.ExitCode != 0:
		result = "failed"
	}
	m.runs.WithLabelValues("kubernetes", result).Inc()
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.claimSeconds, m.runs, m.claims, m.held}
}

// Describe implements [prometheus.Collector].
func (s *Sandbox) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range s.metrics.collectors() {
		c.Describe(ch)
	}
}

// Collect implements [prometheus.Collector]: register the Sandbox in the
// bot's registry to serve its metrics.
func (s *Sandbox) Collect(ch chan<- prometheus.Metric) {
	for _, c := range s.metrics.collectors() {
		c.Collect(ch)
	}
}
