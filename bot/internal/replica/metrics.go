package replica

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// statsTimeout bounds reading the queue's figures for a scrape.
const statsTimeout = time.Second

// Collector reports the shared queue's figures ([Stats]) on
// each scrape of /metrics.
type Collector struct {
	store *Store

	up, queued, pending, running, waiting *prometheus.Desc
	claimed, handedBack, lost             *prometheus.Desc
}

// NewCollector reports st's figures.
func NewCollector(st *Store) *Collector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &Collector{
		store:      st,
		up:         d("sandpiper_redis_up", "Whether Redis answers (1) or not (0); /readyz fails while it does not."),
		queued:     d("sandpiper_queue_questions", "Questions in the shared queue, waiting or being answered, across replicas (the same on every replica)."),
		pending:    d("sandpiper_queue_pending", "Questions replicas have taken and not finished, across replicas (the same on every replica)."),
		running:    d("sandpiper_queue_running", "Questions this replica is answering."),
		waiting:    d("sandpiper_queue_waiting", "Questions this replica holds, waiting for their thread's turn or a worker."),
		claimed:    d("sandpiper_queue_claimed_total", "Questions this replica took over from replicas that stopped."),
		handedBack: d("sandpiper_queue_handed_back_total", "Questions this replica handed back to the queue at shutdown."),
		lost:       d("sandpiper_queue_lost_total", "Questions another replica took over from this one (it was cut off from Redis)."),
	}
}

// Describe sends the figures' descriptions.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.queued, c.pending, c.running, c.waiting, c.claimed, c.handedBack, c.lost} {
		ch <- d
	}
}

// Collect reads the figures (Redis's within a second) and sends them.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), statsTimeout)
	defer cancel()
	st, err := c.store.Stats(ctx)
	up := 1.0
	if err != nil || c.store.Ready() != nil {
		up = 0
	}
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	counter := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	gauge(c.up, up)
	if err == nil { // the queue's figures are Redis's: unknown while it is away
		gauge(c.queued, float64(st.Queued))
		gauge(c.pending, float64(st.Pending))
	}
	gauge(c.running, float64(st.Running))
	gauge(c.waiting, float64(st.Waiting))
	counter(c.claimed, st.Claimed)
	counter(c.handedBack, st.HandedBack)
	counter(c.lost, st.Lost)
}
