// Package metric makes the bot's Prometheus metrics the one way the bot
// and its answer path both use: labelled counters start at 0 for every
// value they will take, so that a dashboard or an alert sees a series
// before its first event.
package metric

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Factory makes metrics registered in one registry.
type Factory struct{ f promauto.Factory }

// With returns a Factory registering in reg.
func With(reg prometheus.Registerer) Factory { return Factory{promauto.With(reg)} }

// Counter makes a counter.
func (f Factory) Counter(name, help string) prometheus.Counter {
	return f.f.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

// Counters makes a counter with one label, each of values at 0.
func (f Factory) Counters(name, help, label string, values ...string) *prometheus.CounterVec {
	c := f.f.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{label})
	for _, v := range values {
		c.WithLabelValues(v)
	}
	return c
}

// Histogram makes a histogram with the given buckets.
func (f Factory) Histogram(name, help string, buckets ...float64) prometheus.Histogram {
	return f.f.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
}

// GaugeFunc makes a gauge read from fn when the metrics are gathered.
func (f Factory) GaugeFunc(name, help string, fn func() float64) prometheus.GaugeFunc {
	return f.f.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, fn)
}
