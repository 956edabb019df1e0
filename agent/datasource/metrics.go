package datasource

import "github.com/prometheus/client_golang/prometheus"

// Query outcomes: the result label of sandpiper_queries_total, and
// agent.Query.Outcome.
const (
	OutcomeOK          = "ok"
	OutcomeTruncated   = "truncated"
	OutcomeFailed      = "failed"
	OutcomeTimeout     = "timeout"
	OutcomeUnavailable = "unavailable"
	OutcomeCanceled    = "canceled"
)

var outcomes = []string{OutcomeOK, OutcomeTruncated, OutcomeFailed, OutcomeTimeout, OutcomeUnavailable, OutcomeCanceled}

// metrics count the queries, by source and outcome, and time them.
type metrics struct {
	queries *prometheus.CounterVec
	seconds *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		queries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandpiper_queries_total",
			Help: "Queries on data sources, by source and result: ok, truncated (a limit cut the result), failed (the database refused the SQL), timeout, unavailable (the source could not be reached or is refused), canceled.",
		}, []string{"source", "result"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sandpiper_query_seconds",
			Help:    "Duration of queries on data sources, from sending the SQL to the last row kept.",
			Buckets: []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60},
		}, []string{"source"}),
	}
	if reg != nil {
		reg.MustRegister(m.queries, m.seconds)
	}
	return m
}

// init starts a source's counters at 0.
func (m *metrics) init(source string) {
	for _, o := range outcomes {
		m.queries.WithLabelValues(source, o)
	}
}

// Collector returns the Set's metrics (sandpiper_queries_total,
// sandpiper_query_seconds) as one prometheus.Collector, for a registry of
// the caller's (the bot's), when Options.Registerer was not given.
func (s *Set) Collector() prometheus.Collector { return s.metrics }

func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	m.queries.Describe(ch)
	m.seconds.Describe(ch)
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	m.queries.Collect(ch)
	m.seconds.Collect(ch)
}
