package main

import (
	"os"
	"testing"

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
