package httpretry

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tt := range []struct {
		header []string
		want   time.Duration
		ok     bool
	}{
		{nil, 0, false},
		{[]string{"Retry-After", ""}, 0, false},
		{[]string{"Retry-After", "2"}, 2 * time.Second, true},
		{[]string{"Retry-After", "0"}, 0, true},
		{[]string{"Retry-After", "0.25"}, 250 * time.Millisecond, true},
		{[]string{"Retry-After-Ms", "150", "Retry-After", "9"}, 150 * time.Millisecond, true},
		{[]string{"Retry-After", now.Add(7 * time.Second).Format(http.TimeFormat)}, 7 * time.Second, true},
		{[]string{"Retry-After", now.Add(-time.Hour).Format(http.TimeFormat)}, 0, true},
		{[]string{"Retry-After", "soon"}, 0, false},
		{[]string{"Retry-After", "-3"}, 0, false},
		{[]string{"Retry-After-Ms", "-1"}, 0, false},
	} {
		h := http.Header{}
		for i := 0; i+1 < len(tt.header); i += 2 {
			h.Set(tt.header[i], tt.header[i+1])
		}
		if got, ok := RetryAfter(h, now); got != tt.want || ok != tt.ok {
			t.Errorf("RetryAfter(%v) = %v, %v; want %v, %v", tt.header, got, ok, tt.want, tt.ok)
		}
	}
}

func TestBackoff(t *testing.T) {
	for _, tt := range []struct {
		try         int
		base, max   time.Duration
		factor      int
		least, most time.Duration
	}{
		{0, time.Second, time.Minute, 2, 750 * time.Millisecond, time.Second},
		{3, time.Second, time.Minute, 2, 6 * time.Second, 8 * time.Second},
		{2, 250 * time.Millisecond, 10 * time.Second, 3, 1687500 * time.Microsecond, 2250 * time.Millisecond},
		{50, time.Second, 30 * time.Second, 2, 22500 * time.Millisecond, 30 * time.Second}, // no overflow
	} {
		for range 100 {
			if d := Backoff(tt.try, tt.base, tt.max, tt.factor); d < tt.least || d > tt.most {
				t.Fatalf("Backoff(%d, %v, %v, %d) = %v, want %v to %v", tt.try, tt.base, tt.max, tt.factor, d, tt.least, tt.most)
			}
		}
	}
}
