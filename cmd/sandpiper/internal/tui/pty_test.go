package tui

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/muesli/termenv"

	"github.com/sandpiper-bot/sandpiper/agent"
)

// TestTerminal runs the chat on a pseudo-terminal and types at it as a
// terminal does: keys as bytes, a paste in bracketed-paste markers, so
// that what Bubble Tea makes of real input is tested too.
func TestTerminal(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 24, Cols: 80}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var out bytes.Buffer
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	show := func() string {
		mu.Lock()
		defer mu.Unlock()
		return screen(t, out.Bytes(), 80)
	}
	waitFor := func(what string, cond func(string) bool) {
		t.Helper()
		waitScreen(t, what, show, cond)
	}
	typ := func(s string) {
		t.Helper()
		if _, err := ptmx.WriteString(s); err != nil {
			t.Fatal(err)
		}
		// Bubble Tea reads input in chunks: give each its own read, as
		// a person typing does.
		time.Sleep(50 * time.Millisecond)
	}

	started := make(chan struct{}, 1)
	var mu2 sync.Mutex
	var asked []string
	ask := func(ctx context.Context, q Question, obs agent.Observer) error {
		mu2.Lock()
		asked = append(asked, q.Text)
		n := len(asked)
		mu2.Unlock()
		obs.StepStarted(ctx, agent.StepEvent{Step: 1, MaxSteps: 10})
		if strings.HasPrefix(q.Text, "wait") {
			started <- struct{}{}
			<-ctx.Done()
			obs.Finished(ctx, agent.FinishEvent{Steps: 1, Stop: agent.StopCanceled, Err: ctx.Err()})
			return ctx.Err()
		}
		obs.AnswerDelta(ctx, agent.DeltaEvent{Step: 1, Text: "answer " + string(rune('0'+n))})
		obs.Finished(ctx, agent.FinishEvent{Steps: 1, Stop: agent.StopAnswered, Model: "m", Answer: "x"})
		return nil
	}
	done := make(chan error, 1)
	go func() {
		done <- New(t.Context(), Options{Ask: ask, Profile: termenv.Ascii, Dark: true}).Run(tty, tty)
	}()

	waitFor("the prompt", func(sc string) bool { return strings.Contains(sc, "enter send") })
	typ("\x1b[200~a,b\r\n1,2\r\n3,4\x1b[201~")
	typ("\x1b\r") // Alt+Enter
	typ("sum?")
	typ("\r")
	waitFor("the first answer", func(sc string) bool { return strings.Contains(sc, "answer 1") })
	waitFor("the prompt", func(sc string) bool { return strings.Contains(lastLines(sc, 1), "enter send") })
	typ("\x1b[A") // Up
	typ("\r")
	waitFor("the second answer", func(sc string) bool { return strings.Contains(sc, "answer 2") })
	waitFor("the prompt", func(sc string) bool { return strings.Contains(lastLines(sc, 1), "enter send") })
	typ("wait for it\r")
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("the question was not asked")
	}
	typ("\x03") // Ctrl+C
	waitFor("the stop", func(sc string) bool { return strings.Contains(sc, "■ stopped") })
	waitFor("the prompt", func(sc string) bool { return strings.Contains(lastLines(sc, 1), "enter send") })
	typ("\x04") // Ctrl+D
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Ctrl+D did not end the chat")
	}
	mu.Lock()
	t.Logf("the screen:\n%s", screen(t, out.Bytes(), 80))
	mu.Unlock()
	mu2.Lock()
	defer mu2.Unlock()
	want := []string{"a,b\n1,2\n3,4\nsum?", "a,b\n1,2\n3,4\nsum?", "wait for it"}
	if strings.Join(asked, "|") != strings.Join(want, "|") {
		t.Errorf("asked %q, want %q", asked, want)
	}
}
