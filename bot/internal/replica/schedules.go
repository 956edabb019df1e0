package replica

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Schedules are records the bot's scheduler keeps (package
// bot/schedule): one hash, id to record, shared by every replica.

// PutSchedule stores rec as the schedule id's record.
func (s *Store) PutSchedule(ctx context.Context, id string, rec []byte) error {
	if err := s.rdb.HSet(ctx, s.k.schedules(), id, rec).Err(); err != nil {
		return fmt.Errorf("replica: storing schedule %s: %w", id, err)
	}
	return nil
}

// Schedules returns every schedule's record, by id.
func (s *Store) Schedules(ctx context.Context) (map[string][]byte, error) {
	m, err := s.rdb.HGetAll(ctx, s.k.schedules()).Result()
	if err != nil {
		return nil, fmt.Errorf("replica: reading schedules: %w", err)
	}
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		out[k] = []byte(v)
	}
	return out, nil
}

// ErrNoSchedule is UpdateSchedule's error for an id with no record.
var ErrNoSchedule = errors.New("replica: no such schedule")

// UpdateSchedule replaces the record of schedule id with what f makes of
// it, in one step: a change made meanwhile by another replica makes f run
// again on the new record. f returning nil deletes the record.
func (s *Store) UpdateSchedule(ctx context.Context, id string, f func([]byte) ([]byte, error)) error {
	key := s.k.schedules()
	for try := 0; try < 16; try++ {
		err := s.rdb.Watch(ctx, func(tx *redis.Tx) error {
			old, err := tx.HGet(ctx, key, id).Bytes()
			if errors.Is(err, redis.Nil) {
				return ErrNoSchedule
			}
			if err != nil {
				return err
			}
			rec, err := f(old)
			if err != nil {
				return err
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				if rec == nil {
					p.HDel(ctx, key, id)
				} else {
					p.HSet(ctx, key, id, rec)
				}
				return nil
			})
			return err
		}, key)
		if errors.Is(err, redis.TxFailedErr) {
			continue
		}
		if err != nil && !errors.Is(err, ErrNoSchedule) {
			return fmt.Errorf("replica: updating schedule %s: %w", id, err)
		}
		return err
	}
	return fmt.Errorf("replica: updating schedule %s: changed by others 16 times in a row", id)
}

// ClaimFire says whether this replica is the one to fire schedule id at
// at: true for exactly one caller across replicas (SET NX PX), for ttl.
func (s *Store) ClaimFire(ctx context.Context, id string, at time.Time, ttl time.Duration) (bool, error) {
	ok, err := s.rdb.SetNX(ctx, s.k.fire(id, at), s.cfg.Replica, ttl).Result()
	if err != nil {
		return false, fmt.Errorf("replica: claiming schedule %s's fire at %s: %w", id, at.Format(time.RFC3339), err)
	}
	return ok, nil
}

func (k keys) schedules() string { return k.prefix + "schedules" }
func (k keys) fire(id string, at time.Time) string {
	return k.prefix + "schedule:fire:" + id + ":" + strconv.FormatInt(at.Unix(), 10)
}
