package stream

import (
	"context"
	"sync"
	"time"

	"github.com/sandpiper-bot/sandpiper/sandbox/httpretry"
)

// rateBudget spaces the calls of one Slack method that all the bot's
// answers make, so together they stay within the method's rate limit for
// the workspace (Slack counts per app, per workspace, per method). It is
// a token bucket: calls go at rate per minute, with a burst, and a 429's
// Retry-After pauses every caller, not only the one that got it.
type rateBudget struct {
	every time.Duration // between calls, on average
	burst int

	mu     sync.Mutex
	tat    time.Time // when the bucket is empty again (GCRA's theoretical arrival time)
	paused time.Time // no call before this (a Retry-After)
	now    func() time.Time
}

func newRateBudget(perMinute, burst int) *rateBudget {
	return &rateBudget{every: time.Minute / time.Duration(max(perMinute, 1)), burst: max(burst, 1), now: time.Now}
}

// wait blocks until a call may go, or ctx ends.
func (r *rateBudget) wait(ctx context.Context) error {
	for {
		r.mu.Lock()
		now := r.now()
		at := r.tat.Add(-time.Duration(r.burst-1) * r.every)
		if r.paused.After(at) {
			at = r.paused
		}
		if !now.Before(at) {
			r.tat = later(r.tat, now).Add(r.every)
			r.mu.Unlock()
			return nil
		}
		r.mu.Unlock()
		if err := httpretry.Sleep(ctx, at.Sub(now)); err != nil {
			return err
		}
	}
}

// pause holds every call back for d: Slack answered 429 with Retry-After d.
func (r *rateBudget) pause(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.paused = later(r.paused, r.now().Add(d))
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
		start:  newRateBudget(streamStartsPerMinute, streamStartBurst),
		append: newRateBudget(appendsPerMinute, streamAppendBurst),
		stop:   newRateBudget(streamStopsPerMinute, streamStopBurst),
	}
}

// Streaming answers (chat.startStream, appendStream, stopStream).
const (
	// streamStartsPerMinute and streamStopsPerMinute budget the Tier 2
	// methods (20+ a minute), with bursts: an answer starts and stops a
	// message for each tool call's commentary and for its answer.
	// streamAppendBurst is how many appends may go at once beyond the
	// budget's pace, so that one answer's first appends do not wait.
	streamAppendBurst     = 3
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
	// streamRateRetries bounds the 429s one streaming call takes before
	// its text is given up on (and the answer posted the old way).
	streamRateRetries = 8
	// streamCloseTimeout bounds the wait for a message's last text when it
	// is closed (a tool call starts, the answer ends).
	streamCloseTimeout = 60 * time.Second
)
