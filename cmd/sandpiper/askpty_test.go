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

// TestChatOnTerminal drives the built binary's chat through a
// pseudo-terminal, with the real sandbox: a paste of several lines is one
// question, Up recalls it, Ctrl+C during a run kills the run and keeps
// the chat, and Ctrl+D leaves with status 0.
func TestChatOnTerminal(t *testing.T) {
	requireSandbox(t)
	bin := buildSandpiper(t)
	model := newChatModel(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "ask")
	cmd.Dir = dir
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		"TERM=xterm-256color",
		"XDG_STATE_HOME=" + filepath.Join(dir, "state"),
		"XDG_CACHE_HOME=" + filepath.Join(dir, "cache"),
		"SANDPIPER_MODEL_API=openai",
		"SANDPIPER_MODEL_BASE_URL=" + model.URL + "/v1",
		"SANDPIPER_MODEL_API_KEY=test-key",
		"SANDPIPER_PYTHON=" + testPython,
	}
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 100})
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer tty.Close()
	var mu sync.Mutex
	var out bytes.Buffer
	go func() {
		buf := make([]byte, 4096)
		answered := 0
		for {
			n, err := tty.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			// Answer the colour and cursor queries as a terminal does
			// (Bubble Tea v1 asks at start-up): unanswered, each waits
			// five seconds.
			queries := strings.Count(out.String(), "\x1b[6n")
			mu.Unlock()
			for ; answered < queries; answered++ {
				tty.WriteString("\x1b]11;rgb:0000/0000/0000\x1b\\\x1b[1;1R")
			}
			if err != nil {
				return
			}
		}
	}()
	shown := func() string {
		mu.Lock()
		defer mu.Unlock()
		return xansi.Strip(out.String())
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second) // a busy machine, a real sandbox
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; the terminal shows:\n%s", what, shown())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	count := func(s string) func() int { return func() int { return strings.Count(shown(), s) } }
	typ := func(s string) {
		t.Helper()
		if _, err := tty.WriteString(s); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // a read of its own, as typed
	}
	answers := count("The program printed")

	waitFor("the prompt", func() bool { return strings.Contains(shown(), "enter send") })
	typ("\x1b[200~Add these:\r\n1\r\n2\r\n3\x1b[201~")
	typ("\r")
	waitFor("the first answer", func() bool { return answers() >= 1 })
	if got := model.asked(); len(got) != 1 || got[0][len(got[0])-1] != "Add these:\n1\n2\n3" {
		t.Fatalf("the model was asked %q, want one question of four lines", got)
	}

	typ("\x1b[A") // Up: the pasted question again
	typ("\r")
	waitFor("the second answer", func() bool { return answers() >= 2 })

	typ("now sleep\r")
	waitFor("the sleeping program", model.running)
	typ("\x03") // Ctrl+C
	waitFor("the stop", func() bool { return strings.Contains(shown(), "stopped") })
	waitFor("the program's end", func() bool { return !model.running() })

	typ("and again\r")
	waitFor("the third answer", func() bool { return answers() >= 3 })
	got := model.asked()
	if q := got[len(got)-1]; len(q) != 3 || q[0] != q[1] || q[2] != "and again" {
		t.Errorf("after the stop the model was asked %q, want the two questions before, without the stopped one", q)
	}

	typ("\x04") // Ctrl+D at the empty prompt
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("sandpiper ask: %v, want exit status 0", err)
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("Ctrl+D did not end the chat; the terminal shows:\n%s", shown())
	}
	hist, err := os.ReadFile(filepath.Join(dir, "state", "sandpiper", "history"))
	if err != nil || !strings.Contains(string(hist), `"Add these:\n1\n2\n3"`) {
		t.Errorf("history file: %q, %v", hist, err)
	}
}
