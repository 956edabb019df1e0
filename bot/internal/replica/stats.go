package replica

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Stats are the queue's figures for /metrics.
type Stats struct {
	// Queued counts the questions in the queue, waiting or being
	// answered; Pending, those a replica has taken and not finished. Both
	// are the queue's, the same seen from any replica (aggregate with max,
	// not sum).
	Queued, Pending int64
	// This replica's questions: being answered, and held waiting for their
	// thread's turn or a worker.
	Running, Waiting int
	// Counters of this replica since Open (aggregate with sum):
	Claimed    int64 // questions taken over from replicas that stopped
	Duplicates int64 // events dropped as seen before
	HandedBack int64 // questions handed back at shutdown
	Lost       int64 // questions another replica took over from this one
}

// Stats returns the queue's figures. On a Redis error the local ones are
// still filled in.
func (s *Store) Stats(ctx context.Context) (Stats, error) {
	st := Stats{
		Claimed:    s.claimed.Load(),
		Duplicates: s.duplicates.Load(),
		HandedBack: s.handedBack.Load(),
		Lost:       s.lost.Load(),
	}
	s.mu.Lock()
	c := s.serving
	s.mu.Unlock()
	if c != nil {
		c.mu.Lock()
		for _, e := range c.held {
			switch e.state {
			case starting, running:
				st.Running++
			case waiting:
				st.Waiting++
			}
		}
		c.mu.Unlock()
	}
	var xlen *redis.IntCmd
	var pending *redis.XPendingCmd
	s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		xlen = p.XLen(ctx, s.k.stream())
		pending = p.XPending(ctx, s.k.stream(), group)
		return nil
	})
	if err := xlen.Err(); err != nil {
		return st, fmt.Errorf("replica: stats: %w", err)
	}
	st.Queued = xlen.Val()
	switch err := pending.Err(); {
	case err == nil:
		st.Pending = pending.Val().Count
	case !isNoGroup(err): // no group yet: nothing pending
		return st, fmt.Errorf("replica: stats: %w", err)
	}
	return st, nil
}
