package replica

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sandpiper-bot/sandpiper/agent"
)

// A thread's Python state (bytes only a sandbox reads) is kept in Redis,
// where every replica reads it: in chunks of stateChunk bytes (a Redis
// string holds at most 512 MB, and a big one blocks the server while it
// is written), state:{thread}:{gen}:{i}, and a record, state:{thread},
// naming the generation, its size and its chunks. A new state's chunks
// are written first, then the record is swapped for the new one in one
// step, and the old chunks deleted: a reader sees one whole state or
// another. Every key lives for the thread's TTL from its last use. A
// state set aside keeps its chunks; its record is renamed
// state-aside:{thread}.

// stateChunk is the size of a state's chunks in Redis.
const stateChunk = 8 << 20

func (k keys) state(thread string) string      { return k.prefix + "state:" + thread }
func (k keys) stateAside(thread string) string { return k.prefix + "state-aside:" + thread }
func (k keys) stateChunk(thread, gen string, i int) string {
	return k.prefix + "state:" + thread + ":" + gen + ":" + strconv.Itoa(i)
}

// stateRecord is a state's record: "gen size chunks".
type stateRecord struct {
	gen    string
	size   int64
	chunks int
}

func (r stateRecord) String() string { return fmt.Sprintf("%s %d %d", r.gen, r.size, r.chunks) }

func parseStateRecord(s string) (stateRecord, bool) {
	f := strings.Fields(s)
	if len(f) != 3 {
		return stateRecord{}, false
	}
	size, err1 := strconv.ParseInt(f[1], 10, 64)
	chunks, err2 := strconv.Atoi(f[2])
	r := stateRecord{f[0], size, chunks}
	if err1 != nil || err2 != nil || size < 0 || chunks != int((size+stateChunk-1)/stateChunk) {
		return r, false
	}
	return r, true
}

// State returns the thread's state, nil when it has none, and keeps it
// for ttl more. A state larger than max bytes, or with chunks gone, is
// an error wrapping agent.ErrStateUnusable (nothing more of it is read).
func (s *Store) State(ctx context.Context, thread string, max int64, ttl time.Duration) ([]byte, error) {
	v, err := s.rdb.Get(ctx, s.k.state(thread)).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("replica: reading the state: %w", err)
	}
	rec, ok := parseStateRecord(v)
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: its record is damaged", agent.ErrStateUnusable)
	case rec.size > max:
		return nil, fmt.Errorf("%w: it holds %d bytes, more than its limit of %d", agent.ErrStateUnusable, rec.size, max)
	}
	p := s.rdb.Pipeline()
	gets := make([]*redis.StringCmd, rec.chunks)
	for i := range gets {
		key := s.k.stateChunk(thread, rec.gen, i)
		gets[i] = p.Get(ctx, key)
		p.PExpire(ctx, key, ttl)
	}
	p.PExpire(ctx, s.k.state(thread), ttl)
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("replica: reading the state: %w", err)
	}
	data := make([]byte, 0, rec.size)
	for _, g := range gets {
		b, err := g.Bytes()
		if errors.Is(err, redis.Nil) || int64(len(data)+len(b)) > rec.size {
			return nil, fmt.Errorf("%w: parts of it are gone", agent.ErrStateUnusable)
		}
		if err != nil {
			return nil, fmt.Errorf("replica: reading the state: %w", err)
		}
		data = append(data, b...)
	}
	if int64(len(data)) != rec.size {
		return nil, fmt.Errorf("%w: parts of it are gone", agent.ErrStateUnusable)
	}
	return data, nil
}

// PutState replaces the thread's state, kept for ttl.
func (s *Store) PutState(ctx context.Context, thread string, data []byte, ttl time.Duration) error {
	rec := stateRecord{gen: fmt.Sprintf("%s%d", s.nonce, s.tokens.Add(1)), size: int64(len(data))}
	rec.chunks = int((rec.size + stateChunk - 1) / stateChunk)
	p := s.rdb.Pipeline()
	for i := range rec.chunks {
		p.Set(ctx, s.k.stateChunk(thread, rec.gen, i), data[i*stateChunk:min(len(data), (i+1)*stateChunk)], ttl)
	}
	if _, err := p.Exec(ctx); err != nil {
		s.deleteChunks(ctx, thread, rec)
		return fmt.Errorf("replica: saving the state: %w", err)
	}
	old, err := s.rdb.SetArgs(ctx, s.k.state(thread), rec.String(), redis.SetArgs{TTL: ttl, Get: true}).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		s.deleteChunks(ctx, thread, rec)
		return fmt.Errorf("replica: saving the state: %w", err)
	}
	if prev, ok := parseStateRecord(old); ok && prev.gen != rec.gen {
		s.deleteChunks(ctx, thread, prev)
	}
	return nil
}

// SetStateAside renames the thread's state record, replacing (and
// deleting) the state set aside before.
func (s *Store) SetStateAside(ctx context.Context, thread string) error {
	if old, err := s.rdb.Get(ctx, s.k.stateAside(thread)).Result(); err == nil {
		if prev, ok := parseStateRecord(old); ok {
			s.deleteChunks(ctx, thread, prev)
		}
	}
	err := s.rdb.Rename(ctx, s.k.state(thread), s.k.stateAside(thread)).Err()
	if err != nil && !strings.Contains(err.Error(), "no such key") {
		return fmt.Errorf("replica: setting the state aside: %w", err)
	}
	return nil
}

// deleteChunks deletes a state's chunks, as far as it can: what is left
// goes at its TTL.
func (s *Store) deleteChunks(ctx context.Context, thread string, rec stateRecord) {
	keys := make([]string, 0, rec.chunks)
	for i := range rec.chunks {
		keys = append(keys, s.k.stateChunk(thread, rec.gen, i))
	}
	if len(keys) > 0 {
		if err := s.rdb.Del(context.WithoutCancel(ctx), keys...).Err(); err != nil {
			s.log.Debug("replica: deleting an old state's chunks failed; they expire with the thread", "thread", thread, "err", err)
		}
	}
}
