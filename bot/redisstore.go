package bot

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
