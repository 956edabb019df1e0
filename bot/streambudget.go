package bot

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

func newStreamBudgets(appendsPerMinute int) *streamBudgets {
	return &streamBudgets{
		start:  newRateBudget(streamStartsPerMinute, streamStartBurst),
		append: newRateBudget(appendsPerMinute, streamAppendBurst),
		stop:   newRateBudget(streamStopsPerMinute, streamStopBurst),
	}
}
