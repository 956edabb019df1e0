package bot

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandpiper-bot/sandpiper/bot/internal/replica"
)

// Bounds of the calls to Redis made outside a question's answer.
const (
	// settingsTimeout bounds reading or saving a channel's settings.
	settingsTimeout = 2 * time.Second
	// statsTimeout bounds reading the queue's figures for /metrics.
	statsTimeout = time.Second
)

// sharedSettings keeps per-channel settings in Redis: a change through
// one replica holds on all of them at once. While Redis cannot be read,
// a channel keeps the settings last read on this replica.
type sharedSettings struct {
	store *replica.Store
	log   *slog.Logger

	mu   sync.Mutex
	last map[string]channelSettings
}

func newSharedSettings(st *replica.Store, log *slog.Logger) *sharedSettings {
	return &sharedSettings{store: st, log: log, last: map[string]channelSettings{}}
}

func (s *sharedSettings) get(channel string) channelSettings {
	if s.store.Ready() != nil { // known to be away: do not wait for it
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.last[channel]
	}
	ctx, cancel := context.WithTimeout(context.Background(), settingsTimeout)
	defer cancel()
	raw, err := s.store.Settings(ctx, channel)
	s.mu.Lock()
	defer s.mu.Unlock()
	var cs channelSettings
	if err == nil && raw != nil {
		err = json.Unmarshal(raw, &cs)
	}
	if err != nil {
		s.log.Warn("reading the channel's settings from redis failed; using the last known", "channel", channel, "err", err)
		return s.last[channel]
	}
	s.last[channel] = cs
	return cs
}

func (s *sharedSettings) setDebug(channel string, on bool, by string, now time.Time) error {
	cs := channelSettings{Debug: on, UpdatedBy: by, UpdatedAt: now.UTC()}
	raw, err := json.Marshal(cs)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), settingsTimeout)
	defer cancel()
	if err := s.store.SetSettings(ctx, channel, raw); err != nil {
		return err
	}
	s.mu.Lock()
	s.last[channel] = cs
	s.mu.Unlock()
	return nil
}

// importSettings copies the channels of channels.json that Redis does not
// have yet into Redis (HSETNX: a setting made since, through any replica,
// wins) and returns how many it copied.
func importSettings(ctx context.Context, file *fileSettings, st *replica.Store) (int, error) {
	file.mu.Lock()
	channels := make(map[string][]byte, len(file.channels))
	for ch, cs := range file.channels {
		raw, err := json.Marshal(cs)
		if err != nil {
			file.mu.Unlock()
			return 0, err
		}
		channels[ch] = raw
	}
	file.mu.Unlock()
	if len(channels) == 0 {
		return 0, nil
	}
	return st.ImportSettings(ctx, channels)
}

// sharedFeedback keeps the clicks on answers' feedback buttons in Redis,
// shared by the replicas: a stream of records (the latest 100,000) and a
// tally per channel that is never trimmed.
type sharedFeedback struct{ store *replica.Store }

func (s sharedFeedback) AddFeedback(ctx context.Context, f Feedback) error {
	return s.store.AddFeedback(ctx, replica.Feedback{
		Channel: f.Channel, ThreadTS: f.ThreadTS, MessageTS: f.MessageTS, User: f.User,
		Rating: f.Rating, Model: f.Model, Time: f.Time,
	})
}

func (s sharedFeedback) FeedbackTally(ctx context.Context, channel string) (map[string]int64, error) {
	return s.store.FeedbackTally(ctx, channel)
}

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
