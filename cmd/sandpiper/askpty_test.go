package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	xansi "github.com/charmbracelet/x/ansi"
	"github.com/creack/pty"
)

// chatModel is a fake OpenAI-compatible model for the chat: each question
// gets one executeCode call, then an answer quoting the program's output.
// A question with "sleep" in it gets a program that sleeps for a minute,
// marked so that the test can find its process.
type chatModel struct {
	*httptest.Server
	marker string

	mu        sync.Mutex
	questions [][]string // the user messages of each request
}

func newChatModel(t *testing.T) *chatModel {
	var b [8]byte
	rand.Read(b[:])
	m := &chatModel{marker: "sandpiper-pty-" + hex.EncodeToString(b[:])}
	m.Server = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.Close)
	return m
}

func (m *chatModel) serve(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	json.NewDecoder(r.Body).Decode(&body)
	var users []string
	for _, msg := range body.Messages {
		if s, ok := msg.Content.(string); ok && msg.Role == "user" {
			users = append(users, s)
		}
	}
	last := body.Messages[len(body.Messages)-1]
	m.mu.Lock()
	if last.Role == "user" {
		m.questions = append(m.questions, users)
	}
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "fake-model",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
		w.(http.Flusher).Flush()
	}
	if last.Role == "tool" {
		var res struct{ Output string }
		s, _ := last.Content.(string)
		json.Unmarshal([]byte(s), &res)
		chunk(map[string]any{"content": "The program printed **" + strings.TrimSpace(res.Output) + "**."}, nil)
		chunk(map[string]any{}, "stop")
	} else {
		code := "print(sum([1, 2, 3]))"
		if q, _ := last.Content.(string); strings.Contains(q, "sleep") {
			code = "import time\nprint('sleeping', flush=True)\ntime.sleep(60)  # " + m.marker
		}
		args, _ := json.Marshal(map[string]string{"code": code})
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "call_1", "type": "function",
			"function": map[string]any{"name": "executeCode", "arguments": string(args)}}}}, nil)
		chunk(map[string]any{}, "tool_calls")
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

func (m *chatModel) asked() [][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([][]string(nil), m.questions...)
}

// running reports whether a process of the sleeping program is alive.
func (m *chatModel) running() bool {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(m.marker)) {
			return true
		}
	}
	return false
}

// ptyRun is sandpiper run on a pseudo-terminal of 100×30, as a user's
// terminal runs it, with the fake model and the real sandbox.
type ptyRun struct {
	t    *testing.T
	cmd  *exec.Cmd
	tty  *os.File
	dir  string
	done chan error // the command's end

	mu  sync.Mutex
	out bytes.Buffer // all it wrote
}

// startPTY starts sandpiper with args on a pseudo-terminal; env adds to
// (or replaces) the test's environment.
func startPTY(t *testing.T, model *chatModel, env map[string]string, args ...string) *ptyRun {
	t.Helper()
	requireSandbox(t)
	bin := buildSandpiper(t)
	dir := t.TempDir()
	vars := map[string]string{
		"PATH":                     os.Getenv("PATH"),
		"HOME":                     dir,
		"TERM":                     "xterm-256color",
		"XDG_STATE_HOME":           filepath.Join(dir, "state"),
		"XDG_CACHE_HOME":           filepath.Join(dir, "cache"),
		"SANDPIPER_MODEL_API":      "openai",
		"SANDPIPER_MODEL_BASE_URL": model.URL + "/v1",
		"SANDPIPER_MODEL":          "test-model",
		"SANDPIPER_MODEL_API_KEY":  "test-key",
		"SANDPIPER_PYTHON":         testPython,
	}
	for k, v := range env {
		vars[k] = v
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 100})
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	r := &ptyRun{t: t, cmd: cmd, tty: tty, dir: dir, done: make(chan error, 1)}
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			cmd.Process.Kill()
			<-r.done
		}
		tty.Close()
	})
	go func() { r.done <- cmd.Wait() }()
	go r.read()
	return r
}

// read takes in what the command writes, answering the colour and cursor
// queries as a terminal does (Bubble Tea v1 asks at start-up): unanswered,
// each waits five seconds.
func (r *ptyRun) read() {
	buf := make([]byte, 4096)
	answered := 0
	for {
		n, err := r.tty.Read(buf)
		r.mu.Lock()
		r.out.Write(buf[:n])
		queries := bytes.Count(r.out.Bytes(), []byte("\x1b[6n"))
		r.mu.Unlock()
		for ; answered < queries; answered++ {
			r.tty.WriteString("\x1b]11;rgb:0000/0000/0000\x1b\\\x1b[1;1R")
		}
		if err != nil {
			return
		}
	}
}

// raw returns all the command wrote so far, escape sequences and all.
func (r *ptyRun) raw() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// shown is what the command wrote so far, without escape sequences.
func (r *ptyRun) shown() string { return xansi.Strip(r.raw()) }

// mark is where the command's output has got to, for waitAfter.
func (r *ptyRun) mark() int { return len(r.shown()) }

// waitFor waits until cond holds. The waits are for events, with a bound
// for a busy machine running the real sandbox: they take what they take.
func (r *ptyRun) waitFor(what string, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			r.t.Fatalf("timed out waiting for %s; the terminal shows:\n%s", what, r.shown())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitAfter waits until texts appear in order in what the command wrote
// after the mark from.
func (r *ptyRun) waitAfter(what string, from int, texts ...string) {
	r.t.Helper()
	r.waitFor(what, func() bool {
		s := r.shown()[from:]
		for _, text := range texts {
			i := strings.Index(s, text)
			if i < 0 {
				return false
			}
			s = s[i+len(text):]
		}
		return true
	})
}

// typ types s in one write, as a terminal sends a key or a paste.
func (r *ptyRun) typ(s string) {
	r.t.Helper()
	if _, err := r.tty.WriteString(s); err != nil {
		r.t.Fatal(err)
	}
}

// wait waits for the command to end and returns its error.
func (r *ptyRun) wait() error {
	r.t.Helper()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		return err
	case <-time.After(90 * time.Second):
		r.t.Fatalf("sandpiper did not end; the terminal shows:\n%s", r.shown())
		return nil
	}
}

// The chat's hint line when it waits for a question; while an answer
// runs, the line says how to stop it instead. So the hint written after
// an answer's end means the chat is ready for the next question.
const idleHint = "enter send"

// TestChatOnTerminal drives the built binary's chat through a
// pseudo-terminal, with the real sandbox: a paste of several lines is one
// question, Up recalls it, Ctrl+C during a run kills the run and keeps
// the chat, and Ctrl+D leaves with status 0.
func TestChatOnTerminal(t *testing.T) {
	model := newChatModel(t)
	r := startPTY(t, model, nil, "ask")
	r.waitAfter("the prompt", 0, idleHint)

	m := r.mark()
	r.typ("\x1b[200~Add these:\r\n1\r\n2\r\n3\x1b[201~")
	r.waitAfter("the paste in the editor", m, "Add these:")
	m = r.mark()
	r.typ("\r")
	// The footer ("2 steps · …") ends each answer, then the prompt is back.
	r.waitAfter("the first answer", m, "The program printed", "2 steps", idleHint)
	if got := model.asked(); len(got) != 1 || got[0][len(got[0])-1] != "Add these:\n1\n2\n3" {
		t.Fatalf("the model was asked %q, want one question of four lines", got)
	}

	m = r.mark()
	r.typ("\x1b[A") // Up: the pasted question again
	r.waitAfter("the question recalled", m, "Add these:")
	m = r.mark()
	r.typ("\r")
	r.waitAfter("the second answer", m, "The program printed", "2 steps", idleHint)

	m = r.mark()
	r.typ("now sleep\r")
	r.waitFor("the sleeping program", model.running)
	stop := time.Now()
	r.typ("\x03") // Ctrl+C
	r.waitFor("the program's end", func() bool { return !model.running() })
	// Reported, not asserted: a loaded machine stretches it.
	t.Logf("the sandbox's program ended %s after Ctrl+C", time.Since(stop).Round(time.Millisecond))
	r.waitAfter("the stop", m, "stopped", idleHint)

	m = r.mark()
	r.typ("and again\r")
	r.waitAfter("the third answer", m, "The program printed", "2 steps", idleHint)
	got := model.asked()
	if q := got[len(got)-1]; len(q) != 3 || q[0] != q[1] || q[2] != "and again" {
		t.Errorf("after the stop the model was asked %q, want the two questions before, without the stopped one", q)
	}

	r.typ("\x04") // Ctrl+D at the empty prompt
	if err := r.wait(); err != nil {
		t.Errorf("sandpiper ask: %v, want exit status 0", err)
	}
	hist, err := os.ReadFile(filepath.Join(r.dir, "state", "sandpiper", "history"))
	if err != nil || !strings.Contains(string(hist), `"Add these:\n1\n2\n3"`) {
		t.Errorf("history file: %q, %v", hist, err)
	}
	if fi, err := os.Stat(filepath.Join(r.dir, "state", "sandpiper", "history")); err == nil && fi.Mode().Perm() != 0o600 {
		t.Errorf("history file mode %v, want 0600", fi.Mode().Perm())
	}
}

// TestChatFirstEnter: a question typed, with Enter, while the sandbox
// starts is sent, not left in the editor with a new line.
func TestChatFirstEnter(t *testing.T) {
	model := newChatModel(t)
	r := startPTY(t, model, nil, "ask")
	r.waitFor("the start", func() bool {
		return strings.Contains(r.shown(), "Starting the sandbox") || strings.Contains(r.shown(), idleHint)
	})
	r.typ("add these\r")
	r.waitAfter("the answer", 0, "The program printed", "2 steps", idleHint)
	if got := model.asked(); len(got) != 1 || got[0][len(got[0])-1] != "add these" {
		t.Errorf("the model was asked %q, want the question typed", got)
	}
	r.typ("\x04")
	if err := r.wait(); err != nil {
		t.Errorf("sandpiper ask: %v, want exit status 0", err)
	}
}

// TestAskOnTerminal asks one question on a pseudo-terminal: rendered like
// the chat, then the command ends; plain text with --plain or TERM=dumb;
// attributes but no colours with NO_COLOR.
func TestAskOnTerminal(t *testing.T) {
	for _, test := range []struct {
		name    string
		env     map[string]string
		args    []string
		ui      bool // the terminal UI, not plain text
		noColor bool
	}{
		{name: "ui", args: []string{"ask", "add 1, 2 and 3"}, ui: true},
		{name: "NO_COLOR", env: map[string]string{"NO_COLOR": "1"}, args: []string{"ask", "add 1, 2 and 3"}, ui: true, noColor: true},
		{name: "plain", args: []string{"ask", "--plain", "add 1, 2 and 3"}},
		{name: "dumb", env: map[string]string{"TERM": "dumb"}, args: []string{"ask", "add 1, 2 and 3"}, noColor: true},
	} {
		t.Run(test.name, func(t *testing.T) {
			model := newChatModel(t)
			r := startPTY(t, model, test.env, test.args...)
			if err := r.wait(); err != nil {
				t.Fatalf("sandpiper %s: %v, want exit status 0; the terminal shows:\n%s", strings.Join(test.args, " "), err, r.shown())
			}
			raw, shown := r.raw(), r.shown()
			// Bubble Tea turns bracketed paste on as it starts.
			if ui := strings.Contains(raw, "\x1b[?2004h"); ui != test.ui {
				t.Errorf("terminal UI shown: %v, want %v", ui, test.ui)
			}
			if !strings.Contains(shown, "The program printed") {
				t.Errorf("no answer; the terminal shows:\n%s", shown)
			}
			if rendered := !strings.Contains(shown, "**6**"); rendered != test.ui {
				t.Errorf("Markdown rendered: %v, want %v; the terminal shows:\n%s", rendered, test.ui, shown)
			}
			if strings.Contains(shown, idleHint) {
				t.Errorf("a one-shot question shows the chat's editor:\n%s", shown)
			}
			if c := colourSGR(raw); test.noColor && c != "" {
				t.Errorf("colour %q with no colour asked for", c)
			} else if !test.noColor && test.ui && c == "" {
				t.Errorf("no colour on a colour terminal:\n%q", raw)
			}
		})
	}
}

var sgr = regexp.MustCompile(`\x1b\[([0-9;:]*)m`)

// colourSGR returns the first SGR sequence in s that sets a colour, or "".
func colourSGR(s string) string {
	for _, m := range sgr.FindAllStringSubmatch(s, -1) {
		for _, p := range strings.FieldsFunc(m[1], func(r rune) bool { return r == ';' || r == ':' }) {
			var n int
			fmt.Sscan(p, &n)
			if 30 <= n && n <= 38 || 40 <= n && n <= 48 || 90 <= n && n <= 97 || 100 <= n && n <= 107 {
				return m[0]
			}
		}
	}
	return ""
}
