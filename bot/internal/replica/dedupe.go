package replica

import (
	"context"
	"fmt"
)

// SeenEvent records a Slack event id and reports whether it was recorded
// before, within the dedupe TTL, by any replica: the first caller gets
// false, the others true. On an error nothing is known; see [Store.Submit]
// for what to do with an event then.
func (s *Store) SeenEvent(ctx context.Context, id string) (bool, error) {
	return s.seen(ctx, s.k.seen("event", id))
}

// SeenMessage is [Store.SeenEvent] for a message, named by its channel and
// ts: a mention arrives as two events (app_mention and message), and a
// redelivered event may carry a new event id.
func (s *Store) SeenMessage(ctx context.Context, channel, ts string) (bool, error) {
	return s.seen(ctx, s.k.seen("msg", channel+"/"+ts))
}

func (s *Store) seen(ctx context.Context, key string) (bool, error) {
	set, err := s.rdb.SetNX(ctx, key, "1", s.cfg.DedupeTTL).Result()
	if err != nil {
		return false, fmt.Errorf("replica: dedupe: %w", err)
	}
	if !set {
		s.duplicates.Add(1)
	}
	return !set, nil
}

// dedupeKeys returns the keys that make q a duplicate.
func (s *Store) dedupeKeys(q Question) []string {
	var ks []string
	if q.EventID != "" {
		ks = append(ks, s.k.seen("event", q.EventID))
	}
	if q.Channel != "" && q.TS != "" {
		ks = append(ks, s.k.seen("msg", q.Channel+"/"+q.TS))
	}
	return ks
}
