package store

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/sandpiper-bot/sandpiper/bot/internal/replica"
)

// settingsTimeout bounds reading or saving a channel's settings in Redis.
const settingsTimeout = 2 * time.Second

// RedisSettings keeps per-channel settings in Redis: a change through
// one replica holds on all of them at once. While Redis cannot be read,
// a channel keeps the settings last read on this replica.
type RedisSettings struct {
	store *replica.Store
	log   *slog.Logger

	mu   sync.Mutex
	last map[string]ChannelSettings
}

// NewRedisSettings keeps the settings in st.
func NewRedisSettings(st *replica.Store, log *slog.Logger) *RedisSettings {
	return &RedisSettings{store: st, log: log, last: map[string]ChannelSettings{}}
}

// Get returns a channel's settings, or the last known while Redis cannot
// be read.
func (s *RedisSettings) Get(channel string) ChannelSettings {
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
	var cs ChannelSettings
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

// Set changes a channel's settings for every replica (change is
// [SetDebug]'s, [SetState]'s or [SetGrant]'s), in one step with
// reading them; on an error nothing changed.
func (s *RedisSettings) Set(channel string, change func(*ChannelSettings), by string, now time.Time) error {
	ctx, cancel := context.WithTimeout(context.Background(), settingsTimeout)
	defer cancel()
	var cs ChannelSettings
	err := s.store.UpdateSettings(ctx, channel, func(raw []byte) ([]byte, error) {
		cs = ChannelSettings{}
		if raw != nil {
			if err := json.Unmarshal(raw, &cs); err != nil {
				return nil, err
			}
		}
		change(&cs)
		cs.UpdatedBy, cs.UpdatedAt = by, now.UTC()
		return json.Marshal(cs)
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.last[channel] = cs
	s.mu.Unlock()
	return nil
}

// ImportSettings copies the channels of channels.json that Redis does not
// have yet into Redis (HSETNX: a setting made since, through any replica,
// wins) and returns how many it copied.
func ImportSettings(ctx context.Context, file *FileSettings, st *replica.Store) (int, error) {
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

// RedisFeedback keeps the clicks on answers' feedback buttons in Redis,
// shared by the replicas: a stream of records (the latest 100,000) and a
// tally per channel that is never trimmed.
type RedisFeedback struct{ store *replica.Store }

// NewRedisFeedback keeps the clicks in st.
func NewRedisFeedback(st *replica.Store) RedisFeedback { return RedisFeedback{st} }

// AddFeedback records one click.
func (s RedisFeedback) AddFeedback(ctx context.Context, f Feedback) error {
	return s.store.AddFeedback(ctx, replica.Feedback{
		Channel: f.Channel, ThreadTS: f.ThreadTS, MessageTS: f.MessageTS, User: f.User,
		Rating: f.Rating, Model: f.Model, Time: f.Time,
	})
}

// FeedbackTally counts a channel's clicks by rating.
func (s RedisFeedback) FeedbackTally(ctx context.Context, channel string) (map[string]int64, error) {
	return s.store.FeedbackTally(ctx, channel)
}
