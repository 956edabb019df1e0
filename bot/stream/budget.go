package stream

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/slack-go/slack"
)

// rateBudget spaces the calls of one Slack method that all the bot's
// answers make, so together they stay within the method's rate limit for
// the workspace (Slack counts per app, per workspace, per method). It is
// a token bucket: calls go at rate per minute, with a burst, and a 429's
// Retry-After pauses every caller, not only the one that got it.
//
// It is shared fairly: callers waiting are served in order of rank (for
// appends, how many its message has made), first come first served
// within a rank, and callers of rank reserve or more leave the last
// reserve tokens of the burst to the others. So a message that starts
// gets its first appends at once, however many longer answers stream
// meanwhile. Those first calls do not wait for a pause either: each
// message tries, and learns from Slack whether the limit still holds
// (one call that may be answered 429 again, per message, at most).
type rateBudget struct {
	every   time.Duration // between calls, on average
	burst   int
	reserve int // tokens of the burst kept for callers of lower rank

	mu     sync.Mutex
	tat    time.Time // when the bucket is empty again (GCRA's theoretical arrival time)
	paused time.Time // no call before this (a Retry-After)
	now    func() time.Time
	queue  []*budgetWaiter // waiting callers, in the order they are served
}

type budgetWaiter struct {
	rank int
	kick chan struct{} // the queue changed: look again
}

// errGaveUp is a wait given up by its caller (its stop channel closed).
var errGaveUp = errors.New("stream: gave up waiting for the rate budget")

func newRateBudget(perMinute, burst, reserve int) *rateBudget {
	burst = max(burst, 1)
	return &rateBudget{every: time.Minute / time.Duration(max(perMinute, 1)), burst: burst, reserve: min(max(reserve, 0), burst-1), now: time.Now}
}

// wait blocks until a call of rank may go. It returns ctx's error when
// ctx ends first, and errGaveUp when stop is closed first.
func (r *rateBudget) wait(ctx context.Context, rank int, stop <-chan struct{}) error {
	w := &budgetWaiter{rank: rank, kick: make(chan struct{}, 1)}
	r.mu.Lock()
	i := len(r.queue)
	for i > 0 && r.queue[i-1].rank > rank {
		i--
	}
	r.queue = slices.Insert(r.queue, i, w)
	if i == 0 && len(r.queue) > 1 {
		r.queue[1].wake() // no longer first
	}
	r.mu.Unlock()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		r.mu.Lock()
		var d time.Duration = -1 // not first: wait for a kick
		if r.queue[0] == w {
			now := r.now()
			at := r.readyAt(rank)
			if !now.Before(at) {
				r.tat = later(r.tat, now).Add(r.every)
				r.leave(w)
				r.mu.Unlock()
				return nil
			}
			d = at.Sub(now)
		}
		r.mu.Unlock()
		var tick <-chan time.Time
		if d >= 0 {
			timer.Reset(d)
			tick = timer.C
		}
		var err error
		select {
		case <-tick:
		case <-w.kick:
		case <-ctx.Done():
			err = ctx.Err()
		case <-stop:
			err = errGaveUp
		}
		if err != nil {
			r.mu.Lock()
			r.leave(w)
			r.mu.Unlock()
			return err
		}
	}
}

// readyAt is when a call of rank may go; r.mu is held. A call of rank
// below the reserve does not wait for a pause: a message's first appends
// try, and Slack says whether its limit still holds.
func (r *rateBudget) readyAt(rank int) time.Time {
	tokens := r.burst - 1 // beyond the next one
	if rank < r.reserve {
		return r.tat.Add(-time.Duration(tokens) * r.every)
	}
	tokens -= r.reserve
	return later(r.tat.Add(-time.Duration(tokens)*r.every), r.paused)
}

// leave takes w out of the queue and tells the one now first; r.mu is
// held.
func (r *rateBudget) leave(w *budgetWaiter) {
	if i := slices.Index(r.queue, w); i >= 0 {
		r.queue = slices.Delete(r.queue, i, i+1)
		if i == 0 && len(r.queue) > 0 {
			r.queue[0].wake()
		}
	}
}

func (w *budgetWaiter) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// pause holds every call back for d: Slack answered 429 with Retry-After d.
func (r *rateBudget) pause(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.paused = later(r.paused, r.now().Add(d))
}

// rateLimited reports whether err is Slack's HTTP 429, and for how long
// it asks calls to pause (Retry-After, or a second without one).
func rateLimited(err error) (time.Duration, bool) {
	if rl, ok := errors.AsType[*slack.RateLimitedError](err); ok {
		return rl.RetryAfter, true
	}
	if sc, ok := errors.AsType[slack.StatusCodeError](err); ok && sc.Code == http.StatusTooManyRequests {
		return time.Second, true
	}
	return 0, false
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// streamBudgets are the rate budgets of the streaming methods, shared by
// all the answers of a bot (one workspace). chat.appendStream is Tier 4
// (100+ a minute); chat.startStream and chat.stopStream are Tier 2 (20+
// a minute; startStream's tier is unconfirmed).
type streamBudgets struct {
	start, append, stop *rateBudget
}

// DefaultAppendsPerMinute is the chat.appendStream budget of all
// answers together: Slack's Tier 4 (100+ a minute per workspace).
const DefaultAppendsPerMinute = 100

func newStreamBudgets(appendsPerMinute int) *streamBudgets {
	return &streamBudgets{
		start:  newRateBudget(streamStartsPerMinute, streamStartBurst, 0),
		append: newRateBudget(appendsPerMinute, streamAppendBurst, streamFirstAppends),
		stop:   newRateBudget(streamStopsPerMinute, streamStopBurst, 0),
	}
}

// Streaming answers (chat.startStream, appendStream, stopStream).
const (
	// streamStartsPerMinute and streamStopsPerMinute budget the Tier 2
	// methods (20+ a minute), with bursts: an answer starts and stops a
	// message for each tool call's commentary and for its answer.
	// streamAppendBurst is how many appends may go at once beyond the
	// budget's pace; streamFirstAppends of them are kept for messages'
	// first appends, so that a message that starts does not wait for the
	// answers streaming already.
	streamAppendBurst     = 4
	streamFirstAppends    = 2
	streamStartsPerMinute = 20
	streamStartBurst      = 20
	streamStopsPerMinute  = 20
	streamStopBurst       = 20
	// streamAppendInterval is the least time between two appends to one
	// message; text written meanwhile goes in the next append.
	streamAppendInterval = 500 * time.Millisecond
	// streamMessageChars bounds the text of one streamed message (Slack:
	// 12,000 characters of markdown a message, 12,000 a call); a longer
	// answer goes on in a new message, up to render.AnswerMaxParts.
	streamMessageChars = 10000
	// streamRateRetries bounds the 429s one chat.startStream or
	// stopStream call takes before its text is given up on (and the
	// answer posted the old way). An append is not tried again: its
	// message holds the rest of its text for the stop.
	streamRateRetries = 8
	// streamCloseTimeout bounds the wait for a message's last text when it
	// is closed (a tool call starts, the answer ends).
	streamCloseTimeout = 60 * time.Second
)
