package bot

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandpiper-bot/sandpiper/bot/internal/replica"
)

// Bounds of the calls to Redis made outside a question's answer.
const (
	// redisCallTimeout bounds a call to Redis made for a thread before
	// its answer starts.
	redisCallTimeout = 2 * time.Second
	// statsTimeout bounds reading the queue's figures for /metrics.
	statsTimeout = time.Second
)

// queueCollector reports the shared queue's figures ([replica.Stats]) on
// each scrape of /metrics.
type queueCollector struct {
	store *replica.Store

	up, queued, pending, running, waiting *prometheus.Desc
	claimed, handedBack, lost             *prometheus.Desc
}

func newQueueCollector(st *replica.Store) *queueCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &queueCollector{
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

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.queued, c.pending, c.running, c.waiting, c.claimed, c.handedBack, c.lost} {
		ch <- d
	}
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
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

// doctorRedis checks the Redis of SANDPIPER_REDIS_URL: it answers PING,
// and its version and this user's permissions have the Streams, consumer
// groups and scripts the queue needs. It changes nothing in Redis.
func doctorRedis(ctx context.Context, cfg Config) Check {
	name := "Redis (" + replica.EnvURL + ")"
	quiet := cfg
	quiet.Logger = slog.New(slog.DiscardHandler)
	if quiet.Replica == "" {
		quiet.Replica = "doctor"
	}
	st, err := openShared(ctx, quiet)
	if err != nil {
		return Check{Name: name, Detail: err.Error()}
	}
	defer st.Close()
	info, err := st.Check(ctx)
	if err != nil {
		return Check{Name: name, Detail: err.Error()}
	}
	detail := fmt.Sprintf("Redis %s at %s, db %d: PING answered; Streams with consumer groups (XAUTOCLAIM) and scripts work", info.Version, info.Addr, info.DB)
	for _, w := range info.Warnings {
		detail += "; warning: " + w
	}
	return Check{Name: name, OK: true, Detail: detail}
}
