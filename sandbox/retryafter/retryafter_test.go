package retryafter

import (
	"net/http"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
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
		if got, ok := Parse(h, now); got != tt.want || ok != tt.ok {
			t.Errorf("Parse(%v) = %v, %v; want %v, %v", tt.header, got, ok, tt.want, tt.ok)
		}
	}
}
