package tui

import (
	"io"
	"testing"
	"time"

	"github.com/muesli/termenv"
)

func TestDetect(t *testing.T) {
	for _, test := range []struct {
		env  map[string]string
		dark bool
	}{
		{map[string]string{}, true},
		{map[string]string{"COLORFGBG": "15;0"}, true},
		{map[string]string{"COLORFGBG": "0;15"}, false},
		{map[string]string{"COLORFGBG": "0;default;7"}, false},
	} {
		// Not a terminal: no colour, and no question asked of it.
		profile, dark := Detect(io.Discard, func(k string) string { return test.env[k] })
		if profile != termenv.Ascii || dark != test.dark {
			t.Errorf("Detect(%v) = %v, %v; want Ascii, %v", test.env, profile, dark, test.dark)
		}
	}
}

func TestFormat(t *testing.T) {
	for _, test := range []struct {
		d    time.Duration
		want string
	}{
		{41 * time.Millisecond, "41ms"},
		{1234 * time.Millisecond, "1.2s"},
		{65 * time.Second, "1m05s"},
	} {
		if got := formatDuration(test.d); got != test.want {
			t.Errorf("formatDuration(%v) = %q, want %q", test.d, got, test.want)
		}
	}
	for _, test := range []struct {
		n    int64
		want string
	}{
		{0, "0"}, {999, "999"}, {1200, "1,200"}, {1234567, "1,234,567"},
	} {
		if got := count(test.n); got != test.want {
			t.Errorf("count(%d) = %q, want %q", test.n, got, test.want)
		}
	}
}
