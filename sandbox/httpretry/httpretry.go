// Package httpretry holds what the module's HTTP clients that retry
// share: how long a server asks them to wait before they try again
// (Retry-After), and how long to back off when it does not say. The model
// providers (under agent) and the Vercel backend (sandbox/vercel) both
// use it; it lives under sandbox, the bottom of the module's imports
// (cmd → bot → agent → sandbox), so that both can import it, as they
// share sandbox/safetext.
package httpretry

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryAfter reads h's Retry-After-Ms (milliseconds, which OpenAI-style APIs
// send), else its Retry-After: seconds, or an HTTP date, counted from now
// (a date past gives 0). ok is false when neither holds a wait.
func RetryAfter(h http.Header, now time.Time) (wait time.Duration, ok bool) {
	if ms, err := strconv.ParseFloat(strings.TrimSpace(h.Get("Retry-After-Ms")), 64); err == nil && ms >= 0 {
		return time.Duration(ms * float64(time.Millisecond)), true
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// Backoff is the wait before retry number try (from 0) when the server
// did not say: base, factor times longer for each retry before it, at
// most max, and up to a quarter less at random, so that clients that
// failed together do not all come back together.
func Backoff(try int, base, max time.Duration, factor int) time.Duration {
	d := base
	for range try {
		if d >= max {
			break
		}
		d *= time.Duration(factor)
	}
	d = min(d, max)
	return d - rand.N(d/4+1)
}

// Sleep waits d, or until ctx is done, when it returns ctx's error.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
