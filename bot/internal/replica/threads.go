package replica

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// A thread's mark names the replica, and the answer, that last finished
// a question in it. A replica that keeps a thread's conversation in
// memory compares the mark with the one it set itself: when another
// replica has answered since, its memory is stale and it reads the thread
// again (from Slack).

// MarkThread sets the thread's mark to a new value of this replica's,
// kept for ttl, and returns it with the mark it replaced ("" if none), in
// one step: a replica that finds its own last mark replaced knows another
// replica touched the thread since.
func (s *Store) MarkThread(ctx context.Context, thread string, ttl time.Duration) (mark, prev string, err error) {
	mark = fmt.Sprintf("%s/%s/%d", s.cfg.Replica, s.nonce, s.tokens.Add(1))
	prev, err = s.rdb.SetArgs(ctx, s.k.mark(thread), mark, redis.SetArgs{TTL: ttl, Get: true}).Result()
	if errors.Is(err, redis.Nil) {
		return mark, "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("replica: marking thread: %w", err)
	}
	return mark, prev, nil
}

// ThreadMark returns the thread's mark, or "" if it has none.
func (s *Store) ThreadMark(ctx context.Context, thread string) (string, error) {
	mark, err := s.rdb.Get(ctx, s.k.mark(thread)).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("replica: reading thread mark: %w", err)
	}
	return mark, nil
}

// Current returns the question first in the thread's order: the one
// being answered, or the next to be. id is its Question.ID and payload
// its Payload; id is "" when the thread has no unfinished question.
func (s *Store) Current(ctx context.Context, thread string) (id string, payload []byte, err error) {
	entry, err := s.rdb.LIndex(ctx, s.k.order(thread), 0).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, fmt.Errorf("replica: current question: %w", err)
	}
	msgs, err := s.rdb.XRange(ctx, s.k.stream(), entry, entry).Result()
	if err != nil {
		return "", nil, fmt.Errorf("replica: current question: %w", err)
	}
	if len(msgs) == 0 {
		return "", nil, nil
	}
	id, _ = msgs[0].Values["q"].(string)
	p, _ := msgs[0].Values["p"].(string)
	return id, []byte(p), nil
}
