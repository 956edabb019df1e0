package replica

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sandpiper-bot/sandpiper/sandbox/httpretry"
)

// Results of [Store.Enqueue] and [Store.Submit].
var (
	// ErrDuplicate: the question's event or message was seen before,
	// within the dedupe TTL, by this replica or another; nothing was
	// queued.
	ErrDuplicate = errors.New("replica: duplicate event")
	// ErrQueueFull: the queue holds Config.MaxQueued questions.
	ErrQueueFull = errors.New("replica: queue full")
	// ErrBacklog: Redis has been unreachable for so long that Submit's
	// buffer is full.
	ErrBacklog = errors.New("replica: redis unreachable and the local buffer is full")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("replica: store closed")
)

// Question is a question (or a command) accepted from Slack, for the
// queue.
type Question struct {
	// ID names the question for [Store.PublishStop] and
	// [Store.AnswerState], e.g. its message's channel and ts; optional.
	ID string
	// Thread orders questions: those with the same Thread are answered one
	// at a time, in the order they were queued (e.g. "C123/1712345678.000100").
	Thread string
	// Payload is what the answer needs; this package does not read it.
	Payload []byte

	// EventID, and Channel with TS, are the event's dedupe keys: when one
	// was seen before (by any replica, within the dedupe TTL) the question
	// is a duplicate and not queued. They are recorded only if it is
	// queued, in the same step. They are not delivered.
	EventID     string
	Channel, TS string
}

// Enqueue appends q to the queue unless it is a duplicate
// ([ErrDuplicate]) or the queue is full ([ErrQueueFull]), and returns its
// entry id. Recording the dedupe keys and queueing are one step in Redis:
// an error leaves neither done, so the event may be tried again.
func (s *Store) Enqueue(ctx context.Context, q Question) (string, error) {
	if q.Thread == "" {
		return "", errors.New("replica: enqueue: question without a thread")
	}
	keys := append([]string{s.k.stream(), s.k.order(q.Thread), s.k.answer(q.ID)}, s.dedupeKeys(q)...)
	res, err := enqueueScript.Run(ctx, s.rdb, keys,
		int64(s.cfg.DedupeTTL/time.Second), s.cfg.MaxQueued, q.Thread, q.ID, q.Payload,
		orderTTL.Milliseconds(), int64(answerTTL/time.Second)).Slice()
	if err != nil {
		return "", fmt.Errorf("replica: enqueue: %w", err)
	}
	switch status, _ := res[0].(string); status {
	case "dup":
		s.duplicates.Add(1)
		return "", ErrDuplicate
	case "full":
		return "", ErrQueueFull
	case "ok":
		id, _ := res[1].(string)
		return id, nil
	default:
		return "", fmt.Errorf("replica: enqueue: unexpected reply %v", res)
	}
}

// Submit enqueues q in the background and never blocks: the bot's event
// loop calls it for each question it accepts, after acking the envelope.
// Questions are enqueued one at a time in the order submitted, so a
// thread's order holds. While Redis is unreachable they wait in memory
// (up to Config.MaxBuffered) and are retried until it answers again;
// retrying is safe, as the dedupe keys make a second try of a question
// that did get queued a duplicate.
//
// done, if not nil, is called once, from another goroutine, with the
// outcome: nil (queued), [ErrDuplicate], [ErrQueueFull], [ErrBacklog] (not
// kept: the buffer was full), [ErrClosed] (the store closed with q still
// buffered) or another error Redis returned for q.
func (s *Store) Submit(q Question, done func(error)) {
	s.outbox.put(q, done)
}

// outbox is Submit's buffer and the goroutine that empties it.
type outbox struct {
	s     *Store
	ch    chan submission
	limit int

	mu     sync.Mutex
	n      int // submitted and not yet settled
	idle   chan struct{}
	closed bool
}

type submission struct {
	q    Question
	done func(error)
}

func newOutbox(s *Store, size int) *outbox {
	o := &outbox{s: s, ch: make(chan submission, size), limit: size, idle: make(chan struct{})}
	close(o.idle)
	return o
}

func (o *outbox) put(q Question, done func(error)) {
	if done == nil {
		done = func(error) {}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		go done(ErrClosed)
		return
	}
	if o.n >= o.limit {
		o.s.log.Warn("question not queued: redis unreachable and the local buffer is full", "thread", q.Thread, "buffered", o.n)
		go done(ErrBacklog)
		return
	}
	o.ch <- submission{q, done} // never blocks: n < limit = cap
	if o.n == 0 {
		o.idle = make(chan struct{})
	}
	o.n++
}

func (o *outbox) settled() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n--
	if o.n == 0 {
		close(o.idle)
	}
}

// flush waits until every submitted question is settled or ctx is done.
func (o *outbox) flush(ctx context.Context) error {
	o.mu.Lock()
	idle := o.idle
	o.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (o *outbox) run(ctx context.Context) {
	defer func() {
		o.mu.Lock()
		o.closed = true
		o.mu.Unlock()
		for {
			select {
			case sub := <-o.ch:
				o.s.log.Error("question lost: the store closed before redis took it", "thread", sub.q.Thread)
				go sub.done(ErrClosed)
				o.settled()
			default:
				return
			}
		}
	}()
	for {
		var sub submission
		select {
		case <-ctx.Done():
			return
		case sub = <-o.ch:
		}
		wait := backoffMin
		for {
			_, err := o.s.Enqueue(ctx, sub.q)
			if err == nil || !transient(err) {
				if err != nil && !errors.Is(err, ErrDuplicate) {
					o.s.log.Warn("question not queued", "thread", sub.q.Thread, "err", err)
				}
				go sub.done(err)
				o.settled()
				break
			}
			if ctx.Err() != nil {
				o.s.log.Error("question lost: the store closed before redis took it", "thread", sub.q.Thread)
				go sub.done(ErrClosed)
				o.settled()
				return
			}
			o.s.log.Debug("enqueue failed; retrying", "thread", sub.q.Thread, "err", err, "in", wait)
			if !sleep(ctx, wait) {
				continue // the next try sees ctx done
			}
			wait = min(2*wait, backoffMax)
		}
	}
}

// transient reports whether err may go away by itself: the network, a
// timeout, or Redis loading, busy or out of memory.
func transient(err error) bool {
	switch {
	case err == nil, errors.Is(err, ErrDuplicate), errors.Is(err, ErrQueueFull):
		return false
	}
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return true // not a reply from Redis: the connection
	}
	for _, p := range []string{"LOADING", "BUSY", "TRYAGAIN", "MASTERDOWN", "READONLY", "OOM", "CLUSTERDOWN", "NOREPLICAS"} {
		if strings.HasPrefix(rerr.Error(), p) {
			return true
		}
	}
	return false
}

// sleep waits d or until ctx is done, and reports whether it waited d.
func sleep(ctx context.Context, d time.Duration) bool { return httpretry.Sleep(ctx, d) == nil }

// compareIDs orders stream entry ids ("ms-seq").
func compareIDs(a, b string) int {
	am, as, _ := strings.Cut(a, "-")
	bm, bs, _ := strings.Cut(b, "-")
	x, _ := strconv.ParseUint(am, 10, 64)
	y, _ := strconv.ParseUint(bm, 10, 64)
	if x != y {
		if x < y {
			return -1
		}
		return 1
	}
	x, _ = strconv.ParseUint(as, 10, 64)
	y, _ = strconv.ParseUint(bs, 10, 64)
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}
