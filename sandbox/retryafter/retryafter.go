// Package retryafter reads how long an HTTP server asks a client to wait
// before it tries again. The model providers (under agent) and the Vercel
// backend (sandbox/vercel) both honour it; it lives under sandbox, the
// bottom of the module's imports (cmd → bot → agent → sandbox), so that
// both can import it, as they share sandbox/safetext.
package retryafter

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Parse reads h's Retry-After-Ms (milliseconds, which OpenAI-style APIs
// send), else its Retry-After: seconds, or an HTTP date, counted from now
// (a date past gives 0). ok is false when neither holds a wait.
func Parse(h http.Header, now time.Time) (wait time.Duration, ok bool) {
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
