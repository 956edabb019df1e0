package main

import (
	"bytes"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/sethvargo/go-envconfig"
)

// TestUseTUI checks when ask shows the terminal UI: both ends on a
// terminal, TERM not dumb, no --plain.
func TestUseTUI(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	for _, test := range []struct {
		name    string
		plain   bool
		env     map[string]string
		in, out *os.File
		want    bool
	}{
		{name: "terminal", env: map[string]string{"TERM": "xterm-256color"}, in: tty, out: tty, want: true},
		{name: "no TERM", in: tty, out: tty, want: true},
		{name: "NO_COLOR", env: map[string]string{"NO_COLOR": "1"}, in: tty, out: tty, want: true}, // without colour
		{name: "--plain", plain: true, in: tty, out: tty},
		{name: "TERM=dumb", env: map[string]string{"TERM": "dumb"}, in: tty, out: tty},
		{name: "stdout piped", in: tty, out: pw},
		{name: "stdin piped", in: pr, out: tty},
	} {
		t.Run(test.name, func(t *testing.T) {
			if got := useTUI(test.plain, envconfig.MapLookuper(test.env), test.in, test.out); got != test.want {
				t.Errorf("useTUI = %v, want %v", got, test.want)
			}
		})
	}
}

// TestRetryToStatusLine: while the chat shows, the model's retries go to
// its status line, in words, not into the log; other records, and retries
// before the chat shows, are logged.
func TestRetryToStatusLine(t *testing.T) {
	var logged bytes.Buffer
	h := statusHandler{terminalLog(&logged, slog.LevelWarn).Handler(), new(atomic.Pointer[func(string)])}
	log := slog.New(h).With("provider", "openai")
	retry := func() {
		log.Warn("model: retrying", "status", 429, "err", "slow down", "retry", 1, "delay", 2*time.Second)
	}
	retry()
	if !strings.Contains(logged.String(), `msg="model: retrying"`) {
		t.Errorf("a retry before the chat shows was not logged: %q", &logged)
	}
	logged.Reset()
	var shown []string
	show := func(s string) { shown = append(shown, s) }
	h.show.Store(&show)
	retry()
	log.Warn("something else")
	if want := []string{"the model's API answered 429 (slow down); retry 1 in 2s"}; !slices.Equal(shown, want) {
		t.Errorf("status line got %q, want %q", shown, want)
	}
	if strings.Contains(logged.String(), "retrying") || !strings.Contains(logged.String(), "something else") {
		t.Errorf("log: %q; want the other record only", &logged)
	}
}
