package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config"
	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config/agentconfig"
	"github.com/sandpiper-bot/sandpiper/sandbox/local"
)

// testPython is the interpreter for tests: the real one, not a pyenv shim.
const testPython = "/usr/bin/python3"

// requireSandbox skips the test when this host cannot run the local
// sandbox (checked once).
func requireSandbox(t *testing.T) {
	t.Helper()
	sandboxOnce.Do(func() {
		if _, err := os.Stat(testPython); err != nil {
			sandboxErr = err
			return
		}
		// Kept open: closing a sandbox while it prepares its pool races
		// (see the report on sandbox/local), which is not this test's business.
		_, sandboxErr = local.New(context.Background(), local.Config{Python: testPython, Logger: slog.New(slog.DiscardHandler)})
	})
	if sandboxErr != nil {
		t.Skipf("the local sandbox does not work here: %v", sandboxErr)
	}
}

var (
	sandboxOnce sync.Once
	sandboxErr  error
)

// fakeModel is a model API speaking both OpenAI chat completions and
// Anthropic Messages, over SSE. For each question it calls executeCode
// with code, then answers with what the tool printed.
type fakeModel struct {
	*httptest.Server
	code string // the program the model writes
	// script, when set, writes the program for a question instead.
	script func(question string) string
	say    string // streamed after the answer, in a chunk of its own (OpenAI)

	mu     sync.Mutex
	bodies []map[string]any
}

func newFakeModel(t *testing.T, code string) *fakeModel {
	f := &fakeModel{code: code}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeModel) requests() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.bodies...)
}

func (f *fakeModel) serve(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	json.NewDecoder(r.Body).Decode(&body)
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	n := len(f.bodies)
	f.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer test-key" {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"message":"bad key","type":"authentication_error"}}`)
		return
	}
	msgs, _ := body["messages"].([]any)
	last, _ := msgs[len(msgs)-1].(map[string]any)
	toolOutput := toolResult(last)
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(event string, v any) {
		b, _ := json.Marshal(v)
		if event != "" {
			fmt.Fprintf(w, "event: %s\n", event)
		}
		fmt.Fprintf(w, "data: %s\n\n", b)
		w.(http.Flusher).Flush()
	}
	answer := ""
	if toolOutput != "" {
		var res struct{ Output string }
		json.Unmarshal([]byte(toolOutput), &res)
		answer = "5 + 5 − 84³ = " + strings.TrimSpace(res.Output)
	}
	code := f.code
	if q, _ := last["content"].(string); f.script != nil && last["role"] == "user" {
		code = f.script(q)
	}
	args, _ := json.Marshal(map[string]string{"code": code})
	switch r.URL.Path {
	case "/v1/chat/completions":
		chunk := func(delta map[string]any, finish any) {
			send("", map[string]any{"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
				"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		}
		if answer == "" {
			chunk(map[string]any{"content": "Let me compute that."}, nil)
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": fmt.Sprintf("call_%d", n), "type": "function",
				"function": map[string]any{"name": "executeCode", "arguments": string(args)}}}}, nil)
			chunk(map[string]any{}, "tool_calls")
		} else {
			chunk(map[string]any{"content": answer}, nil)
			if f.say != "" {
				chunk(map[string]any{"content": f.say}, nil)
			}
			chunk(map[string]any{}, "stop")
		}
		send("", map[string]any{"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": []any{},
			"usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}})
		io.WriteString(w, "data: [DONE]\n\n")
	case "/v1/messages":
		send("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "m", "type": "message", "role": "assistant",
			"model": "m", "content": []any{}, "usage": map[string]any{"input_tokens": 100, "output_tokens": 1}}})
		send("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		stop := "end_turn"
		if answer == "" {
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": "Let me compute that."}})
			send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
			send("content_block_start", map[string]any{"type": "content_block_start", "index": 1, "content_block": map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", n), "name": "executeCode", "input": map[string]any{}}})
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 1, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(args)}})
			send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 1})
			stop = "tool_use"
		} else {
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": answer}})
			send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		}
		send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop}, "usage": map[string]any{"output_tokens": 10}})
		send("message_stop", map[string]any{"type": "message_stop"})
	default:
		http.NotFound(w, r)
	}
}

// toolResult is the content of a tool result in the last message, if it
// is one (OpenAI: a tool message; Anthropic: a user message whose first
// block is a tool_result).
func toolResult(last map[string]any) string {
	if last["role"] == "tool" {
		s, _ := last["content"].(string)
		return s
	}
	blocks, _ := last["content"].([]any)
	if len(blocks) == 0 {
		return ""
	}
	b, _ := blocks[0].(map[string]any)
	if b["type"] != "tool_result" {
		return ""
	}
	parts, _ := b["content"].([]any)
	if len(parts) == 0 {
		return ""
	}
	p, _ := parts[0].(map[string]any)
	s, _ := p["text"].(string)
	return s
}

// askEnv sets the environment for `sandpiper ask` against f, in a fresh
// working directory whose .env.local holds the key.
func askEnv(t *testing.T, f *fakeModel, api string) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile(".env.local", []byte("# Created by a test\nSANDPIPER_MODEL_API_KEY=\"test-key\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SANDPIPER_MODEL_API_KEY", "restored after the test")
	os.Unsetenv("SANDPIPER_MODEL_API_KEY")
	base := f.URL + "/v1"
	if api == "anthropic" {
		base = f.URL
	}
	for k, v := range map[string]string{
		"SANDPIPER_MODEL_API":      api,
		"SANDPIPER_MODEL_BASE_URL": base,
		"SANDPIPER_MODEL":          "test-model", // the fake's: on loopback, the default would be warned about
		"SANDPIPER_PYTHON":         testPython,
		"SANDPIPER_DEBUG":          "",
		"NO_COLOR":                 "1",
	} {
		t.Setenv(k, v)
	}
}

// TestAskEndToEnd asks the question of the issue through each API: the
// model's code runs in the real sandbox, and the terminal shows the code,
// its output and the answer.
func TestAskEndToEnd(t *testing.T) {
	requireSandbox(t)
	for _, api := range []string{"openai", "anthropic"} {
		t.Run(api, func(t *testing.T) {
			f := newFakeModel(t, "print(5 + 5 - 84**3)")
			askEnv(t, f, api)
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), []string{"ask", "What is 5 + 5 minus 84 cubed?"}, strings.NewReader(""), &stdout, &stderr)
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, &stdout, &stderr)
			}
			out := stdout.String()
			t.Logf("stdout:\n%s\nstderr:\n%s", out, &stderr)
			for _, want := range []string{
				"Let me compute that.\nPython\n",
				"  print(5 + 5 - 84**3)\n✓ exit 0 · ",
				"  -592694\n\n",
				"\n5 + 5 − 84³ = -592694\n",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("stdout lacks %q", want)
				}
			}
			// Plain output is plain lines: no frames.
			if strings.ContainsAny(out, "╭│├╰─") {
				t.Errorf("plain output draws frames:\n%s", out)
			}
			if !strings.Contains(stderr.String(), "2 steps · 200 tokens in, 20 out") {
				t.Errorf("stderr lacks the usage line:\n%s", &stderr)
			}
			// The program's output, not the model's say-so, reached the model.
			reqs := f.requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			msgs := reqs[1]["messages"].([]any)
			if got, want := toolResult(msgs[len(msgs)-1].(map[string]any)), `{"output":"-592694\n","stderr":"","exitCode":0}`; got != want {
				t.Errorf("tool result sent back = %s, want %s", got, want)
			}
		})
	}
}

// TestAskFailingProgram shows a failed run as an error card.
func TestAskFailingProgram(t *testing.T) {
	requireSandbox(t)
	f := newFakeModel(t, "print(undefined_name)")
	askEnv(t, f, "openai")
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"ask", "--debug", "break it"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, &stdout, &stderr)
	}
	out := stdout.String()
	for _, want := range []string{"✗ exit 1 · ", "  NameError: name 'undefined_name' is not defined\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	// --debug logs the code and the raw output.
	for _, want := range []string{`msg="executeCode: running" code=print(undefined_name)`, `msg="executeCode: finished" exit_code=1`, `NameError`} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, &stderr)
		}
	}
}

// TestAskChat keeps the conversation across turns when reading questions
// from a pipe, and leaves at EOF.
func TestAskChat(t *testing.T) {
	requireSandbox(t)
	f := newFakeModel(t, "print(5 + 5 - 84**3)")
	askEnv(t, f, "openai")
	var stdout, stderr bytes.Buffer
	in := strings.NewReader("What is 5 + 5 minus 84 cubed?\n\nAnd again?\n")
	if code := run(t.Context(), []string{"ask"}, in, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, &stdout, &stderr)
	}
	out := stdout.String()
	if strings.Count(out, "5 + 5 − 84³ = -592694") != 2 || !strings.Contains(out, "› And again?") {
		t.Errorf("stdout:\n%s", out)
	}
	reqs := f.requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	// The second question's first request carries the whole first turn.
	msgs := reqs[2]["messages"].([]any)
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.(map[string]any)["role"].(string))
	}
	if got, want := strings.Join(roles, " "), "system user assistant tool assistant user"; got != want {
		t.Errorf("roles = %s, want %s", got, want)
	}
}

// TestAskModelErrors shows an actionable error and exits 1.
func TestAskModelErrors(t *testing.T) {
	requireSandbox(t)
	f := newFakeModel(t, "print(1)")
	askEnv(t, f, "openai")
	t.Setenv("SANDPIPER_MODEL_API_KEY", "")
	t.Setenv("AI_GATEWAY_API_KEY", "")
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("VERCEL_OIDC_TOKEN", "expired-token")
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"ask", "hi"}, strings.NewReader(""), &stdout, &stderr)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	want := "sandpiper: agent: step 1: model: OpenAI-compatible API: 401 Unauthorized: bad key. The key came from VERCEL_OIDC_TOKEN: these tokens expire 12 hours after `vercel env pull` wrote them; run `vercel env pull` again to refresh it, or set AI_GATEWAY_API_KEY.\n"
	if stderr.String() != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", &stderr, want)
	}
	if strings.Contains(stderr.String()+stdout.String(), "expired-token") {
		t.Error("the key was printed")
	}
}

// TestAskCancel interrupts a run whose program never ends: ask returns
// at once, and no sandboxed python3 is left behind.
func TestAskCancel(t *testing.T) {
	requireSandbox(t)
	// A marker no other process on the machine has in its command line.
	marker := fmt.Sprintf("sandpiper-ask-cancel-%d", time.Now().UnixNano())
	f := newFakeModel(t, "import time\nmarker = '"+marker+"'\nwhile True: time.sleep(0.01)")
	askEnv(t, f, "openai")
	ctx, cancel := context.WithCancel(t.Context())
	var stdout, stderr syncBuffer
	done := make(chan int)
	go func() { done <- run(ctx, []string{"ask", "loop"}, strings.NewReader(""), &stdout, &stderr) }()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(stdout.String(), "  import time") {
		if time.Now().After(deadline) {
			t.Fatalf("the program never started:\n%s\n%s", stdout.String(), stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // let it run
	t0 := time.Now()
	cancel()
	select {
	case code := <-done:
		if code != 130 {
			t.Errorf("exit %d, want 130", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ask did not return after cancel")
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("ask took %v to stop", d)
	}
	if out := stdout.String(); strings.Contains(out, "exit") || !strings.Contains(out, "✗ stopped · ") {
		t.Errorf("the cancelled run's card:\n%s", out)
	}
	if got := stderr.String(); !strings.HasSuffix(got, "sandpiper: interrupted\n") {
		t.Errorf("stderr = %q", got)
	}
	if procs := procsWith(t, marker); len(procs) > 0 {
		t.Errorf("python still running: %v", procs)
	}
}

// procsWith lists processes whose command line contains marker, waiting
// a second for them to go.
func procsWith(t *testing.T, marker string) []string {
	t.Helper()
	var found []string
	for range 20 { // the sandbox's processes are reaped asynchronously
		found = found[:0]
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			if err == nil && bytes.Contains(cmd, []byte(marker)) {
				found = append(found, e.Name()+": "+strings.ReplaceAll(string(cmd), "\x00", " "))
			}
		}
		if len(found) == 0 {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return found
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestAskUsageErrors(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, tt := range []struct {
		args []string
		env  map[string]string
		code int
		want string
	}{
		{[]string{"ask", "--frobnicate"}, nil, 2, "sandpiper: ask: unknown flag --frobnicate"},
		{[]string{"ask", "--help"}, nil, 0, ""},
		{[]string{"ask", "q"}, map[string]string{"SANDPIPER_MODEL_API": "gemini"}, 2, `config: SANDPIPER_MODEL_API=gemini is not a model API: want openai`},
		{[]string{"ask", "q"}, map[string]string{"SANDPIPER_LOG_LEVEL": "loud"}, 2, "config: SANDPIPER_LOG_LEVEL=loud is not a log level: want debug, info, warn or error"},
		{[]string{"ask", "q"}, map[string]string{"SANDPIPER_MAX_STEPS": "0"}, 2, "config: SANDPIPER_MAX_STEPS=0 is out of range: want at least 1"},
		{[]string{"ask", "q"}, map[string]string{"SANDPIPER_MAX_STEPS": "ten"}, 2, "config: SANDPIPER_MAX_STEPS=ten is not a whole number: want e.g. SANDPIPER_MAX_STEPS=10"},
		{[]string{"ask", "q"}, map[string]string{"SANDPIPER_MODEL_API_KEY": ""}, 2,
			"sandpiper: config: no model API key: set SANDPIPER_MODEL_API_KEY, AI_GATEWAY_API_KEY, VERCEL_OIDC_TOKEN or OPENAI_API_KEY"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			for _, k := range []string{"SANDPIPER_MODEL_API", "SANDPIPER_MAX_STEPS", "AI_GATEWAY_API_KEY", "VERCEL_OIDC_TOKEN", "OPENAI_API_KEY"} {
				t.Setenv(k, "")
			}
			t.Setenv("SANDPIPER_MODEL_API_KEY", "k")
			t.Setenv("SANDPIPER_MODEL_API", "openai")
			t.Setenv("SANDPIPER_MAX_STEPS", "10")
			t.Setenv("SANDPIPER_LOG_LEVEL", "")
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), tt.args, strings.NewReader(""), &stdout, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want %d, %q", code, &stderr, tt.code, tt.want)
			}
		})
	}
}

// TestAskWithFiles puts --file files in /mnt/data, tells the model about
// them, and saves what the program writes in --out, printing the paths.
func TestAskWithFiles(t *testing.T) {
	requireSandbox(t)
	f := newFakeModel(t, "import csv, os\nrows = list(csv.DictReader(open('data.csv')))\ntotal = sum(int(r['n']) for r in rows)\nos.makedirs('out', exist_ok=True)\nopen('out/total.txt', 'w').write(str(total))\nprint(total, sorted(os.listdir('.')))")
	askEnv(t, f, "openai")
	if err := os.WriteFile("data.csv", []byte("n\n1\n2\n39\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll("other", 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile("other/data.csv", []byte("n\n5\n"), 0o644)
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"ask", "--file", "data.csv", "--file=other/data.csv", "--out", "results", "add up n"}, strings.NewReader(""), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, &stdout, &stderr)
	}
	out := stdout.String()
	for _, want := range []string{"  42 ['data-2.csv', 'data.csv', 'out']\n", "  saved results/out/total.txt (2 bytes)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if data, err := os.ReadFile("results/out/total.txt"); err != nil || string(data) != "42" {
		t.Errorf("saved file = %q, %v", data, err)
	}
	msgs := f.requests()[0]["messages"].([]any)
	q := msgs[len(msgs)-1].(map[string]any)["content"].(string)
	for _, want := range []string{"add up n\n\n[Files in /mnt/data", "- /mnt/data/data.csv (9 bytes, CSV table, given with --file data.csv)", "- /mnt/data/data-2.csv (", "    | n\n    | 1\n"} {
		if !strings.Contains(q, want) {
			t.Errorf("question sent to the model lacks %q:\n%s", want, q)
		}
	}
}

func TestAskFileErrors(t *testing.T) {
	t.Chdir(t.TempDir())
	os.WriteFile("big.csv", bytes.Repeat([]byte("x"), 4096), 0o644)
	for _, tt := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"ask", "--file", "missing.csv", "q"}, nil, "sandpiper: ask: --file: stat missing.csv: no such file or directory"},
		// After the question too: not sent to the model as text.
		{[]string{"ask", "plot it", "--file", "missing.csv"}, nil, "sandpiper: ask: --file: stat missing.csv: no such file or directory"},
		{[]string{"ask", "--file", "big.csv", "q"}, map[string]string{"SANDPIPER_FILE_MAX_SIZE": "1KiB"}, "--file big.csv: 4.0 KiB is more than the 1.0 KiB allowed per file (SANDPIPER_FILE_MAX_SIZE)"},
		{[]string{"ask", "--file", "."}, nil, "--file .: not a regular file"},
		{[]string{"ask", "--file"}, nil, "sandpiper: ask: --file needs a value"},
		{[]string{"ask", "q"}, map[string]string{"SANDPIPER_FILES_MAX_COUNT": "0"}, "config: SANDPIPER_FILES_MAX_COUNT=0 is out of range: want 1 to 64"},
		{[]string{"ask", "q"}, map[string]string{"SANDPIPER_FILE_MAX_SIZE": "lots"}, "config: SANDPIPER_FILE_MAX_SIZE"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Setenv("SANDPIPER_MODEL_API_KEY", "k")
			t.Setenv("SANDPIPER_MODEL_API", "openai")
			t.Setenv("SANDPIPER_LOG_LEVEL", "")
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), tt.args, strings.NewReader(""), &stdout, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want 2, %q", code, &stderr, tt.want)
			}
		})
	}
}

// TestAskChatWithFiles: in a chat, the files are described with the first
// question, and again only when the runs changed them.
func TestAskChatWithFiles(t *testing.T) {
	requireSandbox(t)
	f := newFakeModel(t, "import os\nopen('count.txt', 'a').write('x')\nprint(sorted(os.listdir('.')), open('count.txt').read())")
	askEnv(t, f, "openai")
	os.WriteFile("in.txt", []byte("hello\n"), 0o644)
	var stdout, stderr bytes.Buffer
	in := strings.NewReader("first?\nsecond?\n")
	if code := run(t.Context(), []string{"ask", "--file", "in.txt"}, in, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, &stdout, &stderr)
	}
	// The second run saw the file the first wrote, and added to it.
	if out := stdout.String(); !strings.Contains(out, "  ['count.txt', 'in.txt'] x\n") || !strings.Contains(out, "  ['count.txt', 'in.txt'] xx\n") {
		t.Errorf("stdout:\n%s", out)
	}
	reqs := f.requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	question := func(r map[string]any) string {
		msgs := r["messages"].([]any)
		for i := len(msgs) - 1; i >= 0; i-- {
			if m := msgs[i].(map[string]any); m["role"] == "user" {
				return m["content"].(string)
			}
		}
		return ""
	}
	if q := question(reqs[0]); !strings.HasPrefix(q, "first?\n\n[Files in /mnt/data") || !strings.Contains(q, "/mnt/data/in.txt (6 bytes") {
		t.Errorf("first question:\n%s", q)
	}
	if q := question(reqs[2]); !strings.HasPrefix(q, "second?\n\n[Files in /mnt/data") || !strings.Contains(q, "/mnt/data/count.txt (1 byte") {
		t.Errorf("second question does not describe the new file:\n%s", q)
	}
}

// TestAskChatKeepsVariables: in a chat, a later question's run uses the
// DataFrame and the number an earlier one defined, without defining them
// again; SANDPIPER_STATE=off makes every run start empty.
func TestAskChatKeepsVariables(t *testing.T) {
	requireSandbox(t)
	if exec.Command(testPython, "-c", "import pandas").Run() != nil {
		t.Skip("no pandas for " + testPython)
	}
	for _, state := range []string{"on", "off"} {
		t.Run(state, func(t *testing.T) {
			f := newFakeModel(t, "")
			f.script = func(q string) string {
				if strings.HasPrefix(q, "define") {
					return "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2, 3], 'b': [4, 5, 6]})\nx = 41\nprint('defined')"
				}
				return "print(x + 1, df.shape)"
			}
			askEnv(t, f, "openai")
			t.Setenv("SANDPIPER_STATE", state)
			var stdout, stderr bytes.Buffer
			in := strings.NewReader("define df and x\nnow use them\n")
			if code := run(t.Context(), []string{"ask"}, in, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, &stdout, &stderr)
			}
			out := stdout.String()
			reqs := f.requests()
			if len(reqs) != 4 {
				t.Fatalf("%d requests, want 4:\n%s", len(reqs), out)
			}
			msgs := reqs[3]["messages"].([]any)
			result := toolResult(msgs[len(msgs)-1].(map[string]any))
			if state == "off" {
				if !strings.Contains(out, "NameError: name 'x' is not defined") || strings.Contains(result, `"state"`) {
					t.Errorf("with state off: stdout:\n%s\ntool result: %s", out, result)
				}
				return
			}
			if !strings.Contains(out, "  42 (3, 2)\n") {
				t.Errorf("the second run did not print 42 (3, 2):\n%s", out)
			}
			if !strings.Contains(result, `"restored":["pd","df","x"]`) || !strings.Contains(result, `"kept":["pd","df","x"]`) {
				t.Errorf("the model's tool result does not list the variables:\n%s", result)
			}
		})
	}
}

// TestHelp: -h prints each command's help on stdout and exits 0, as help
// asked for is no error; an unknown flag is one.
func TestHelp(t *testing.T) {
	for _, cmd := range []string{"run", "ask", "exec", "doctor", "healthcheck"} {
		for _, flag := range []string{"-h", "--help"} {
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), []string{cmd, flag}, strings.NewReader(""), &stdout, &stderr)
			if code != 0 || !strings.Contains(stdout.String(), "sandpiper "+cmd) && !(cmd == "run" && strings.Contains(stdout.String(), "sandpiper [run]")) || stderr.Len() > 0 {
				t.Errorf("%s %s: exit %d, stdout %q, stderr %q; want 0, the help, nothing", cmd, flag, code, &stdout, &stderr)
			}
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"doctor", "--frobnicate"}, strings.NewReader(""), &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "doctor takes no arguments") {
		t.Errorf("doctor --frobnicate: exit %d, stderr %q; want 2, the usage", code, &stderr)
	}
}

// TestWarnDataStack: ask says once, in words, which data modules the
// sandbox's Python lacks, and nothing when it has them all.
func TestWarnDataStack(t *testing.T) {
	var b bytes.Buffer
	warnDataStack(&b, agent.Runtime{Python: "3.12.1", Modules: []agent.Module{{Name: "numpy"}, {Name: "pandas"}}}, nil)
	want := "sandpiper: the sandbox's Python lacks matplotlib, scipy, sympy, openpyxl, so questions about data, files and charts may fail. Install them for it, or set SANDPIPER_PYTHON to a Python that has them: sandpiper doctor looks for one.\n"
	if b.String() != want {
		t.Errorf("warning:\n got %q\nwant %q", &b, want)
	}
	b.Reset()
	var all []agent.Module
	for _, m := range config.DataModules {
		all = append(all, agent.Module{Name: m})
	}
	warnDataStack(&b, agent.Runtime{Python: "3.12.1", Modules: all}, nil)
	if b.Len() > 0 {
		t.Errorf("warned with every module there: %q", &b)
	}
}

// TestWarnDefaultModelOnLoopback: ask says, in words, that a server on
// this machine is sent the default model's id when SANDPIPER_MODEL is not
// set; not when it is, nor for a remote API.
func TestWarnDefaultModelOnLoopback(t *testing.T) {
	for _, tt := range []struct {
		model, url string
		warn       bool
	}{
		{"", "http://127.0.0.1:11434/v1", true},
		{"llama3", "http://localhost:11434/v1", false},
		{"", "https://ai-gateway.vercel.sh/v1", false},
	} {
		vars := map[string]string{"SANDPIPER_MODEL": tt.model, "SANDPIPER_MODEL_BASE_URL": tt.url, "SANDPIPER_MODEL_API_KEY": "k"}
		m, err := agentconfig.LoadModel(t.Context(), envconfig.MapLookuper(vars))
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		warnStart(&b, agentconfig.Agent{Model: m}, agent.Runtime{}, nil)
		want := ""
		if tt.warn {
			want = "sandpiper: SANDPIPER_MODEL is not set, so the default anthropic/claude-opus-4.8 is asked for, which a server on this machine may not have: set SANDPIPER_MODEL to one of its models.\n"
		}
		if b.String() != want {
			t.Errorf("%+v: warned %q, want %q", tt, &b, want)
		}
	}
}
