package replica

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"
)

// Per-channel settings live in one Redis hash, a field per channel, its
// value the bot's JSON. They are read from Redis on each use, so a change
// made through one replica holds on every replica at once.

// Settings returns a channel's settings as last set, or nil if none were.
func (s *Store) Settings(ctx context.Context, channel string) ([]byte, error) {
	v, err := s.rdb.HGet(ctx, s.k.channels(), channel).Bytes()
	switch {
	case errors.Is(err, redis.Nil):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("replica: reading settings of %s: %w", channel, err)
	}
	return v, nil
}

// SetSettings replaces a channel's settings.
func (s *Store) SetSettings(ctx context.Context, channel string, value []byte) error {
	if err := s.rdb.HSet(ctx, s.k.channels(), channel, value).Err(); err != nil {
		return fmt.Errorf("replica: saving settings of %s: %w", channel, err)
	}
	return nil
}

// UpdateSettings replaces a channel's settings with what change makes of
// them (nil if none were set), in one step: a change made meanwhile
// through another replica is read again and changed too (after a pause
// of a few milliseconds, up to 100 times, within ctx).
func (s *Store) UpdateSettings(ctx context.Context, channel string, change func([]byte) ([]byte, error)) error {
	key := s.k.channels()
	for range 100 {
		err := s.rdb.Watch(ctx, func(tx *redis.Tx) error {
			old, err := tx.HGet(ctx, key, channel).Bytes()
			if errors.Is(err, redis.Nil) {
				old, err = nil, nil
			}
			if err != nil {
				return err
			}
			v, err := change(old)
			if err != nil {
				return err
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.HSet(ctx, key, channel, v)
				return nil
			})
			return err
		}, key)
		if !errors.Is(err, redis.TxFailedErr) {
			if err != nil {
				return fmt.Errorf("replica: saving settings of %s: %w", channel, err)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("replica: saving settings of %s: %w", channel, context.Cause(ctx))
		case <-time.After(time.Duration(1+rand.IntN(5)) * time.Millisecond):
		}
	}
	return fmt.Errorf("replica: saving settings of %s: changed by others too often", channel)
}

// AllSettings returns every channel's settings.
func (s *Store) AllSettings(ctx context.Context) (map[string][]byte, error) {
	m, err := s.rdb.HGetAll(ctx, s.k.channels()).Result()
	if err != nil {
		return nil, fmt.Errorf("replica: reading settings: %w", err)
	}
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		out[k] = []byte(v)
	}
	return out, nil
}

// ImportSettings adds the channels' settings that Redis does not have yet
// (from a single replica's channels.json, when moving to Redis) and
// returns how many it added; settings already in Redis are kept.
func (s *Store) ImportSettings(ctx context.Context, channels map[string][]byte) (int, error) {
	cmds, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for ch, v := range channels {
			p.HSetNX(ctx, s.k.channels(), ch, v)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("replica: importing settings: %w", err)
	}
	n := 0
	for _, c := range cmds {
		if c.(*redis.BoolCmd).Val() {
			n++
		}
	}
	return n, nil
}
