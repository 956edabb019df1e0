package tui

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/muesli/termenv"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// session drives a Model in a Bubble Tea program through teatest, at a
// fixed size, without colour, with a clock that stands still and a
// spinner that does not turn, so that its screen is the same on every
// run.
type session struct {
	t  *testing.T
	tm *teatest.TestModel
	m  *Model
	w  int

	mu  sync.Mutex
	out bytes.Buffer // all the program wrote so far
}

func newSession(t *testing.T, opts Options, w, h int) *session {
	t.Helper()
	opts.Profile = termenv.Ascii
	m := New(t.Context(), opts)
	m.now = func() time.Time { return time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) }
	m.animate = false
	s := &session{t: t, m: m, w: w}
	s.tm = teatest.NewTestModel(t, m, teatest.WithInitialTermSize(w, h))
	return s
}

// read takes in what the program wrote since the last read.
func (s *session) read(r io.Reader) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.out.ReadFrom(r); err != nil {
		s.t.Fatal(err)
	}
}

// screenBytes returns all the program wrote so far.
func (s *session) screenBytes() []byte {
	s.read(s.tm.Output())
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.out.Bytes())
}

// screen is what the terminal shows now.
func (s *session) screen() string {
	s.read(s.tm.Output())
	s.mu.Lock()
	defer s.mu.Unlock()
	return screen(s.t, s.out.Bytes(), s.w)
}

// waitFor waits until the screen satisfies cond.
func (s *session) waitFor(what string, cond func(screen string) bool) {
	s.t.Helper()
	waitScreen(s.t, what, s.screen, cond)
}

// waitScreen polls show until what it returns satisfies cond, and
// returns that screen; after 20s (the machine may be busy) it fails the
// test.
func waitScreen(t *testing.T, what string, show func() string, cond func(screen string) bool) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		sc := show()
		if cond(sc) {
			return sc
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; the screen:\n%s", what, sc)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitIdle waits until the prompt is back and no answer runs.
func (s *session) waitIdle() {
	s.t.Helper()
	s.waitFor("the prompt", func(sc string) bool {
		return strings.Contains(lastLines(sc, 2), "enter send")
	})
}

// typ types text, a key per character (teatest's Type sends bytes).
func (s *session) typ(text string) {
	for _, r := range text {
		s.tm.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
}

// ask sends question as the user would (typed, then Enter), waits until
// the screen shows want (what names it in a failure), and then for the
// prompt to be back.
func (s *session) ask(question, what, want string) {
	s.t.Helper()
	s.typ(question)
	s.key(tea.KeyEnter)
	s.waitFor(what, func(sc string) bool { return strings.Contains(sc, want) })
	s.waitIdle()
}

func (s *session) key(k tea.KeyType) { s.tm.Send(tea.KeyMsg{Type: k}) }

func (s *session) paste(text string) {
	s.tm.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(text), Paste: true})
}

// finish waits for the program to end and returns the final screen and
// model.
func (s *session) finish() (string, *Model) {
	s.t.Helper()
	m := s.tm.FinalModel(s.t, teatest.WithFinalTimeout(20*time.Second)).(*Model)
	s.read(s.tm.FinalOutput(s.t))
	return s.screen(), m
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// asker is a fake Ask that records the questions and plays a script of
// events for each.
type asker struct {
	mu        sync.Mutex
	questions []Question
	scripts   [][]any // one per question; the last repeats
}

// step is a step of a script that waits, or fails.
type step func(ctx context.Context) error

func (a *asker) ask(ctx context.Context, q Question, obs agent.Observer) error {
	a.mu.Lock()
	a.questions = append(a.questions, q)
	script := a.scripts[min(len(a.questions), len(a.scripts))-1]
	a.mu.Unlock()
	for _, e := range script {
		switch e := e.(type) {
		case agent.StepEvent:
			obs.StepStarted(ctx, e)
		case agent.DeltaEvent:
			obs.AnswerDelta(ctx, e)
		case agent.ToolCallEvent:
			obs.ToolCallStarted(ctx, e)
		case agent.ToolResultEvent:
			obs.ToolCallFinished(ctx, e)
		case agent.FinishEvent:
			obs.Finished(ctx, e)
		case step:
			if err := e(ctx); err != nil {
				return err
			}
		default:
			panic("asker: bad script entry")
		}
	}
	return nil
}

func (a *asker) asked() []Question {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.questions)
}

// answer is a script that answers text in one step.
func answer(text string) []any {
	return []any{
		agent.StepEvent{Step: 1, MaxSteps: 10},
		agent.DeltaEvent{Step: 1, Text: text},
		agent.FinishEvent{Steps: 1, Stop: agent.StopAnswered, Model: "test-model", Answer: text},
	}
}

// deltas cuts text into pieces of n bytes, as a model streams it.
func deltas(step int, text string, n int) []any {
	var out []any
	for len(text) > 0 {
		k := min(n, len(text))
		out = append(out, agent.DeltaEvent{Step: step, Text: text[:k]})
		text = text[k:]
	}
	return out
}

func pythonCall(code string) agent.ToolCallEvent {
	return agent.ToolCallEvent{Step: 1, Call: agent.ToolCall{ID: "c1", Name: agent.ExecuteCodeName}, Code: code}
}

// TestChat is a whole chat at 80×24: the banner, a question, a card with
// its output and a saved file, an answer streamed in pieces and rendered
// as Markdown (bold, a table, a list, code), the footer, and Ctrl+D.
func TestChat(t *testing.T) {
	const text = "**2¹⁰** is **1024**, and π is about `3.1416`.\n\n" +
		"| x | 2^x |\n|---|---|\n| 9 | 512 |\n| 10 | 1024 |\n\n" +
		"- exact for integers\n- *fast* enough\n\n" +
		"```python\nprint(2**10)\n```\n"
	call := pythonCall("import math\nprint(2**10)\nprint(math.pi)")
	script := []any{
		agent.StepEvent{Step: 1, MaxSteps: 10},
		agent.DeltaEvent{Step: 1, Text: "I'll compute it."},
		call,
		agent.ToolResultEvent{ToolCallEvent: call, Duration: 41 * time.Millisecond, Sandbox: &sandbox.Result{
			Stdout: []byte("1024\n3.141592653589793\n"),
			Files:  []sandbox.File{{Name: "plot.png", Data: make([]byte, 2048)}},
		}},
		agent.StepEvent{Step: 2, MaxSteps: 10},
	}
	script = append(script, deltas(2, text, 7)...)
	script = append(script, agent.FinishEvent{Steps: 2, Usage: agent.Usage{InputTokens: 1200, OutputTokens: 80}, Stop: agent.StopAnswered, Model: "test-model", Answer: text})
	a := &asker{scripts: [][]any{script}}
	s := newSession(t, Options{
		Ask:      a.ask,
		Banner:   "test-model · Python 3.11 (numpy, pandas)",
		SaveFile: func(f sandbox.File) (string, error) { return "sandpiper-output/" + f.Name, nil },
	}, 80, 24)
	s.waitIdle()
	s.ask("What is 2**10, and π?", "the footer", "tokens in")
	s.key(tea.KeyCtrlD)
	sc, m := s.finish()
	if err := m.Err(); err != nil {
		t.Errorf("Err() = %v, want nil", err)
	}
	teatest.RequireEqualOutput(t, []byte(sc))
	if got := a.asked(); len(got) != 1 || got[0].Text != "What is 2**10, and π?" {
		t.Errorf("asked %q, want one question", got)
	}
}

// TestPaste checks that a paste of several lines stays in the editor as
// one message, that Alt+Enter and Ctrl+J add lines, and that Enter sends
// it all as one question.
func TestPaste(t *testing.T) {
	a := &asker{scripts: [][]any{answer("ok")}}
	s := newSession(t, Options{Ask: a.ask}, 80, 24)
	s.waitIdle()
	s.typ("Sum these:")
	s.tm.Send(tea.KeyMsg{Type: tea.KeyEnter, Alt: true})
	s.paste("1\r\n2\r\n3\n")
	s.key(tea.KeyCtrlJ)
	s.typ("thanks")
	s.waitFor("the paste in the editor", func(sc string) bool { return strings.Contains(sc, "thanks") })
	if got := a.asked(); len(got) != 0 {
		t.Fatalf("asked %q before Enter", got)
	}
	s.key(tea.KeyEnter)
	s.waitFor("the answer", func(sc string) bool { return strings.Contains(sc, "1 step") })
	s.waitIdle()
	s.key(tea.KeyCtrlD)
	s.finish()
	want := "Sum these:\n1\n2\n3\n\nthanks"
	if got := a.asked(); len(got) != 1 || got[0].Text != want {
		t.Errorf("asked %q, want one question %q", got, want)
	}
}

// TestHistory checks that Up and Down walk the history, which comes from
// the file and gains the questions asked, and that the draft comes back.
func TestHistory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history")
	h, err := OpenHistory(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	h.Add("old question\nof two lines")
	a := &asker{scripts: [][]any{answer("ok")}}
	s := newSession(t, Options{Ask: a.ask, History: h}, 80, 24)
	s.waitIdle()
	s.ask("new one", "the answer", "1 step")
	s.typ("draft")
	s.key(tea.KeyUp) // "new one"
	s.key(tea.KeyUp) // the old question, cursor on its last line
	s.key(tea.KeyUp) // its first line
	s.key(tea.KeyUp) // no older entry: stays
	s.key(tea.KeyDown)
	s.key(tea.KeyDown) // "new one"
	s.key(tea.KeyDown) // the draft
	s.typ("!")
	s.waitFor("the draft", func(sc string) bool { return strings.Contains(lastLines(sc, 3), "draft!") })
	s.key(tea.KeyUp)
	s.key(tea.KeyUp)
	s.key(tea.KeyEnter)
	s.waitFor("the second answer", func(sc string) bool { return strings.Count(sc, "1 step") == 2 })
	s.waitIdle()
	s.key(tea.KeyCtrlC) // at an empty prompt: leaves
	s.finish()
	got := a.asked()
	if len(got) != 2 || got[0].Text != "new one" || got[1].Text != "old question\nof two lines" {
		t.Errorf("asked %q, want new one, then the old question", got)
	}
	h2, err := OpenHistory(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := h2.Entries(), []string{"old question\nof two lines", "new one", "old question\nof two lines"}; !slices.Equal(got, want) {
		t.Errorf("history file holds %q, want %q", got, want)
	}
}

// TestStop checks that Ctrl+C during an answer cancels it, keeps the
// chat, and that the next question is asked.
func TestStop(t *testing.T) {
	started := make(chan struct{})
	var stopErr error
	call := pythonCall("while True: pass")
	a := &asker{scripts: [][]any{
		{
			agent.StepEvent{Step: 1, MaxSteps: 10},
			call,
			step(func(ctx context.Context) error {
				close(started)
				<-ctx.Done()
				stopErr = ctx.Err()
				return nil
			}),
			agent.ToolResultEvent{ToolCallEvent: call, Err: context.Canceled, Duration: time.Second},
			agent.FinishEvent{Steps: 1, Stop: agent.StopCanceled, Err: context.Canceled},
			step(func(ctx context.Context) error { return ctx.Err() }),
		},
		answer("second answer"),
	}}
	s := newSession(t, Options{Ask: a.ask}, 80, 24)
	s.waitIdle()
	s.typ("spin")
	s.key(tea.KeyEnter)
	<-started
	s.waitFor("the running card", func(sc string) bool { return strings.Contains(sc, "running") })
	t.Run("running", func(t *testing.T) { teatest.RequireEqualOutput(t, []byte(s.screen())) })
	s.key(tea.KeyCtrlC)
	s.waitFor("the stop", func(sc string) bool { return strings.Contains(sc, "■ stopped") })
	s.waitIdle()
	if !errors.Is(stopErr, context.Canceled) {
		t.Errorf("Ask's context ended with %v, want context.Canceled", stopErr)
	}
	s.ask("again", "the second answer", "second answer")
	s.key(tea.KeyCtrlD)
	sc, m := s.finish()
	if err := m.Err(); err != nil {
		t.Errorf("Err() = %v, want nil", err)
	}
	teatest.RequireEqualOutput(t, []byte(sc))
}

// TestCtrlC checks Ctrl+C at the prompt: it clears a line, and leaves at
// an empty prompt.
func TestCtrlC(t *testing.T) {
	a := &asker{scripts: [][]any{answer("ok")}}
	s := newSession(t, Options{Ask: a.ask}, 80, 24)
	s.waitIdle()
	s.typ("half a thought")
	s.waitFor("the text", func(sc string) bool { return strings.Contains(sc, "half a thought") })
	s.key(tea.KeyCtrlC)
	s.waitFor("an empty editor", func(sc string) bool { return !strings.Contains(sc, "half a thought") })
	s.key(tea.KeyCtrlC)
	sc, _ := s.finish()
	if got := a.asked(); len(got) != 0 {
		t.Errorf("asked %q, want nothing", got)
	}
	if strings.Contains(sc, "enter send") {
		t.Errorf("the live area is left on the screen:\n%s", sc)
	}
}

// TestCommands checks the slash commands.
func TestCommands(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.csv")
	if err := os.WriteFile(data, []byte("a,b\n1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := &asker{scripts: [][]any{answer("ok")}}
	var resets int
	var debug []bool
	s := newSession(t, Options{
		Ask:      a.ask,
		Reset:    func() { resets++ },
		SetDebug: func(on bool) { debug = append(debug, on) },
	}, 80, 24)
	s.waitIdle()
	for _, c := range []string{"/help", "/file " + data, "/file " + filepath.Join(dir, "missing.csv"), "/file " + dir, "/debug", "/debug", "/nope", "/new"} {
		s.typ(c)
		s.key(tea.KeyEnter)
	}
	s.ask("what is in it?", "the answer", "1 step")
	s.key(tea.KeyCtrlD)
	sc, _ := s.finish()
	got := a.asked()
	// /new drops the attached file.
	if len(got) != 1 || len(got[0].Files) != 0 {
		t.Errorf("asked %+v, want one question without files (/new came after /file)", got)
	}
	if resets != 1 || !slices.Equal(debug, []bool{true, false}) {
		t.Errorf("resets = %d, debug = %v; want 1, [true false]", resets, debug)
	}
	for _, want := range []string{"❯ /help", "❯ /debug", "❯ /new", "Commands", "attached data.csv (8 bytes)", "missing.csv: no such file", "is not a regular file", "execution logging on", "execution logging off", "/nope is not a command", "new conversation"} {
		if !strings.Contains(sc, want) {
			t.Errorf("the screen lacks %q:\n%s", want, sc)
		}
	}
}

// TestAttach checks that /file attaches a file to the next question only.
func TestAttach(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data.csv")
	if err := os.WriteFile(data, []byte("a,b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := &asker{scripts: [][]any{answer("ok")}}
	s := newSession(t, Options{Ask: a.ask}, 80, 24)
	s.waitIdle()
	s.typ("/file " + data)
	s.key(tea.KeyEnter)
	s.waitFor("the attachment", func(sc string) bool { return strings.Contains(sc, "attached: data.csv") })
	s.ask("first", "the answer", "1 step")
	s.typ("second")
	s.key(tea.KeyEnter)
	s.waitFor("the second answer", func(sc string) bool { return strings.Count(sc, "1 step") == 2 })
	s.waitIdle()
	s.key(tea.KeyCtrlD)
	s.finish()
	got := a.asked()
	if len(got) != 2 || !slices.Equal(got[0].Files, []string{data}) || len(got[1].Files) != 0 {
		t.Errorf("asked %+v, want the file with the first question only", got)
	}
}

// TestOneShot checks a one-shot question: no editor, and the program
// ends when the answer is done.
func TestOneShot(t *testing.T) {
	a := &asker{scripts: [][]any{answer("The answer is **42**.")}}
	s := newSession(t, Options{Ask: a.ask, Question: "life?", Files: []string{"x.csv"}}, 80, 24)
	sc, m := s.finish()
	if err := m.Err(); err != nil {
		t.Errorf("Err() = %v, want nil", err)
	}
	teatest.RequireEqualOutput(t, []byte(sc))
	if got := a.asked(); len(got) != 1 || got[0].Text != "life?" || !slices.Equal(got[0].Files, []string{"x.csv"}) {
		t.Errorf("asked %+v", got)
	}
}

// TestOneShotStopped checks that Esc stops a one-shot question, which
// then ends with ErrStopped.
func TestOneShotStopped(t *testing.T) {
	started := make(chan struct{})
	a := &asker{scripts: [][]any{{
		agent.StepEvent{Step: 1, MaxSteps: 10},
		step(func(ctx context.Context) error { close(started); <-ctx.Done(); return ctx.Err() }),
	}}}
	s := newSession(t, Options{Ask: a.ask, Question: "spin"}, 80, 24)
	<-started
	s.key(tea.KeyEscape)
	_, m := s.finish()
	if err := m.Err(); !errors.Is(err, ErrStopped) {
		t.Errorf("Err() = %v, want ErrStopped", err)
	}
}

// TestError checks that a failed question is reported and the chat goes
// on.
func TestError(t *testing.T) {
	a := &asker{scripts: [][]any{
		{step(func(context.Context) error { return errors.New("model API: 500 \x1b]0;pwned\a") })},
		answer("fine now"),
	}}
	s := newSession(t, Options{Ask: a.ask}, 80, 24)
	s.waitIdle()
	s.ask("one", "the error", "error: model API: 500")
	s.ask("two", "the answer", "fine now")
	s.key(tea.KeyCtrlD)
	sc, m := s.finish()
	if !strings.Contains(sc, "␛]0;pwned␇") {
		t.Errorf("the error is not shown neutralised:\n%s", sc)
	}
	if err := m.Err(); err != nil {
		t.Errorf("a chat left at the prompt: Err() = %v, want nil", err)
	}
}

// TestErrorLast leaves the chat right after a question failed: leaving
// is not an error, so the command exits 0.
func TestErrorLast(t *testing.T) {
	a := &asker{scripts: [][]any{{step(func(context.Context) error { return errors.New("model API: 500") })}}}
	s := newSession(t, Options{Ask: a.ask}, 80, 24)
	s.waitIdle()
	s.ask("one", "the error", "error: model API: 500")
	s.key(tea.KeyCtrlD)
	if _, m := s.finish(); m.Err() != nil {
		t.Errorf("Err() = %v, want nil", m.Err())
	}
}

// TestHostile sends escape sequences in every place the model or a
// program writes: none may reach the terminal.
func TestHostile(t *testing.T) {
	const osc = "\x1b]52;c;cHduZWQ=\a" // write to the clipboard
	call := agent.ToolCallEvent{Step: 1, Call: agent.ToolCall{ID: "c1", Name: agent.ExecuteCodeName}, Code: "print('" + osc + "')\x1b[2J"}
	script := []any{
		agent.StepEvent{Step: 1, MaxSteps: 10},
		call,
		agent.ToolResultEvent{ToolCallEvent: call, Duration: time.Millisecond, Sandbox: &sandbox.Result{
			Stdout:       []byte(osc + "\x1b[2Jcleared\r\n\u202egnp.exe"),
			Stderr:       []byte("\x9b31m8-bit CSI"),
			Files:        []sandbox.File{{Name: "a\x1b[31m.png", Data: []byte("x")}},
			FilesOmitted: []string{"b\x07.png (too large)"},
		}},
		agent.StepEvent{Step: 2, MaxSteps: 10},
		agent.DeltaEvent{Step: 2, Text: "Done " + osc + " &#27;]0;title&#7; &#x1B;[2J **&#155;**\n\n`&#27;` \x1b[1A"},
		agent.FinishEvent{Steps: 2, Stop: agent.StopAnswered, Model: "m\x1b[2J", Answer: "x"},
	}
	a := &asker{scripts: [][]any{script}}
	s := newSession(t, Options{Ask: a.ask, Banner: "evil\x1b]0;t\a"}, 80, 24)
	s.waitIdle()
	s.ask("go", "the footer", "2 steps")
	s.key(tea.KeyCtrlD)
	// screen fails on any OSC sequence, control character or CSI other
	// than the renderer's own.
	sc, _ := s.finish()
	for _, want := range []string{"␛]52;c;cHduZWQ=␇", "␛[2Jcleared", "a␛[31m.png", "Done", "␛]0;title␇"} {
		if !strings.Contains(sc, want) {
			t.Errorf("the screen lacks %q:\n%s", want, sc)
		}
	}
	s.mu.Lock()
	raw := s.out.String()
	s.mu.Unlock()
	if !utf8.ValidString(raw) {
		t.Errorf("the output is not UTF-8")
	}
	for _, bad := range []string{"\x1b]", "\a", "\x1b[2J", "\u009b", "\u202e", "\x1b[31m"} {
		if strings.Contains(raw, bad) {
			t.Errorf("the output holds %q", bad)
		}
	}
}

// TestResize checks that the live answer and the editor re-flow to a new
// width.
func TestResize(t *testing.T) {
	release := make(chan struct{})
	a := &asker{scripts: [][]any{{
		agent.StepEvent{Step: 1, MaxSteps: 10},
		agent.DeltaEvent{Step: 1, Text: "A sentence long enough to wrap differently at forty columns than at eighty."},
		step(func(context.Context) error { <-release; return nil }),
		agent.FinishEvent{Steps: 1, Stop: agent.StopAnswered, Model: "test-model", Answer: "x"},
	}}}
	s := newSession(t, Options{Ask: a.ask}, 80, 24)
	s.waitIdle()
	s.typ("q")
	s.key(tea.KeyEnter)
	s.waitFor("the live answer", func(sc string) bool { return strings.Contains(sc, "eighty.") })
	// The renderer paints the live area anew after a resize: play what
	// it writes from then on, at the new width.
	mark := len(s.screenBytes())
	s.tm.Send(tea.WindowSizeMsg{Width: 40, Height: 24})
	after := func() string { return screen(t, s.screenBytes()[mark:], 40) }
	if sc := waitScreen(t, "the answer to re-flow after the resize", after, reflowed); !strings.Contains(sc, "❯") {
		t.Errorf("no editor after the resize:\n%s", sc)
	}
	close(release)
	s.waitFor("the answer", func(sc string) bool { return strings.Contains(sc, "1 step") })
	if sc := s.screen(); strings.Contains(sc, "la\nst line") {
		t.Errorf("/help wraps inside a word:\n%s", sc)
	}
	s.key(tea.KeyCtrlD)
	s.finish()
}

// reflowed reports whether the answer of TestResize is wrapped at 40
// columns.
func reflowed(sc string) bool {
	for _, l := range strings.Split(sc, "\n") {
		if strings.Contains(l, "A sentence") {
			return !strings.Contains(l, "wrap differently")
		}
	}
	return false
}

// TestExit checks that exit, typed as a question, leaves.
func TestExit(t *testing.T) {
	for _, word := range []string{"exit", "quit", "/exit"} {
		t.Run(word, func(t *testing.T) {
			a := &asker{scripts: [][]any{answer("ok")}}
			s := newSession(t, Options{Ask: a.ask}, 80, 24)
			s.waitIdle()
			s.typ(word)
			s.key(tea.KeyEnter)
			s.finish()
			if got := a.asked(); len(got) != 0 {
				t.Errorf("asked %q, want nothing", got)
			}
		})
	}
}

// TestBannerOneLine: a chat's first line names the model and the
// sandbox's Python on one line, cut to the terminal's width; /help shows
// it whole.
func TestBannerOneLine(t *testing.T) {
	banner := "test-model · Python 3.11.2 with numpy 1.26.4, pandas 2.1.4, matplotlib 3.8.2, scipy 1.11.4, sympy 1.12, openpyxl 3.1.2"
	a := &asker{}
	s := newSession(t, Options{Ask: a.ask, Banner: banner}, 60, 24)
	s.waitIdle()
	sc := s.screen()
	first, _, _ := strings.Cut(sc, "\n")
	if !strings.HasPrefix(first, "Sandpiper · test-model · Python 3.11.2") || !strings.HasSuffix(first, "…") || lipgloss.Width(first) > 60 {
		t.Errorf("first line %q: want the banner cut to 60 columns, ending in …", first)
	}
	if strings.Contains(sc, "openpyxl") {
		t.Errorf("the banner wrapped:\n%s", sc)
	}
	s.typ("/help")
	s.key(tea.KeyEnter)
	s.waitFor("the whole banner in /help, wrapped between words", func(sc string) bool {
		return strings.Contains(sc, "Model and sandbox") && strings.Contains(sc, "openpyxl")
	})
	if sc := s.screen(); strings.Contains(sc, "la\nst line") {
		t.Errorf("/help wraps inside a word:\n%s", sc)
	}
	s.key(tea.KeyCtrlD)
	s.finish()
}

// TestStatusLine: a retry shown with Status stands beside what the run
// does, in the status line, until the run's next event; it is never
// printed into the conversation.
func TestStatusLine(t *testing.T) {
	release := make(chan struct{})
	a := &asker{scripts: [][]any{{
		agent.StepEvent{Step: 1, MaxSteps: 10},
		step(func(ctx context.Context) error { <-release; return nil }),
		agent.DeltaEvent{Step: 1, Text: "Forty-two."},
		agent.FinishEvent{Steps: 1, Stop: agent.StopAnswered, Model: "test-model", Answer: "Forty-two."},
	}}}
	s := newSession(t, Options{Ask: a.ask}, 80, 24)
	s.waitIdle()
	s.typ("what is 6*7")
	s.key(tea.KeyEnter)
	s.waitFor("thinking", func(sc string) bool { return strings.Contains(sc, "Thinking…") })
	const retry = "the model's API answered 429 (slow down); retry 1 in 2s"
	s.m.Status(retry)
	s.waitFor("the retry in the status line", func(sc string) bool {
		return strings.Contains(lastLines(sc, 4), "Thinking… 0s · "+retry)
	})
	close(release)
	s.waitFor("the answer", func(sc string) bool { return strings.Contains(sc, "Forty-two.") })
	s.waitIdle()
	if sc := s.screen(); strings.Contains(sc, retry) {
		t.Errorf("the retry stayed on the screen after the run moved on:\n%s", sc)
	}
	s.key(tea.KeyCtrlD)
	s.finish()
}
