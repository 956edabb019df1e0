package bot_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/agent/openai"
)

// wireModel is a language model at the wire: an HTTP server speaking the
// OpenAI chat completions API with server-sent events, driven by the real
// agent/openai provider. Like scriptedModel, it writes the Python the
// script maps the last user message to, and after a run answers with what
// the program printed (and the files it wrote), so every answer comes from
// a real run.
type wireModel struct {
	srv    *httptest.Server
	script func(question string) (code string, ok bool)

	mu     sync.Mutex
	bodies []chatRequest
}

// chatRequest is the part of a chat completions request the fake reads.
type chatRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"function"`
	} `json:"tools"`
}

// text returns a message's content as text (a string, or text parts).
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

func newWireModel(t *testing.T, script func(string) (string, bool)) *wireModel {
	m := &wireModel{script: script}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

// model returns the real provider pointed at the fake.
func (m *wireModel) model(t *testing.T) agent.Model {
	t.Helper()
	p, err := openai.New(openai.Config{
		BaseURL: m.srv.URL + "/v1",
		Key:     agent.APIKey{Value: "sk-wire-test", Source: "test"},
		Model:   "fake/wire",
		Retry:   agent.RetryPolicy{MaxRetries: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// requests returns the requests the fake received.
func (m *wireModel) requests() []chatRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]chatRequest(nil), m.bodies...)
}

// lastUser returns the text of the last user message of a request.
func (r chatRequest) lastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return contentText(r.Messages[i].Content)
		}
	}
	return ""
}

func (m *wireModel) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-wire-test" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"message":"bad key or path","type":"invalid_request_error"}}`)
		return
	}
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"message":"bad body","type":"invalid_request_error"}}`)
		return
	}
	m.mu.Lock()
	m.bodies = append(m.bodies, req)
	n := len(m.bodies)
	m.mu.Unlock()

	w.Header().Set("Content-Type", "text/event-stream")
	send := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{"id": "chatcmpl-wire", "object": "chat.completion.chunk", "created": 1767225600, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
		w.(http.Flusher).Flush()
	}
	answer := func(s string) {
		send(map[string]any{"role": "assistant", "content": ""}, nil)
		// Two chunks, as a streaming model would send them.
		half := len(s) / 2
		for half > 0 && !isRuneStart(s[half]) {
			half--
		}
		send(map[string]any{"content": s[:half]}, nil)
		send(map[string]any{"content": s[half:]}, nil)
		send(map[string]any{}, "stop")
	}
	last := req.Messages[len(req.Messages)-1]
	switch last.Role {
	case "user":
		code, ok := m.script(contentText(last.Content))
		if !ok {
			answer("I can answer that without code: **hello**.")
			break
		}
		args, _ := json.Marshal(map[string]string{"code": code})
		send(map[string]any{"role": "assistant", "content": ""}, nil)
		send(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": fmt.Sprintf("call_w%d", n), "type": "function",
			"function": map[string]any{"name": agent.ExecuteCodeName, "arguments": ""}}}}, nil)
		send(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": string(args)}}}}, nil)
		send(map[string]any{}, "tool_calls")
	case "tool":
		var res struct {
			Output   string   `json:"output"`
			Stderr   string   `json:"stderr"`
			ExitCode int      `json:"exitCode"`
			Files    []string `json:"files"`
		}
		json.Unmarshal([]byte(contentText(last.Content)), &res)
		switch {
		case res.ExitCode != 0:
			lines := strings.Split(strings.TrimSpace(res.Stderr), "\n")
			answer("The program failed: `" + lines[len(lines)-1] + "`")
		case len(res.Files) > 0:
			answer("The result is **" + strings.TrimSpace(truncateForAnswer(res.Output)) + "**. I saved " + strings.Join(res.Files, ", ") + ".")
		default:
			answer("The result is **" + strings.TrimSpace(truncateForAnswer(res.Output)) + "**.")
		}
	default:
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	b, _ := json.Marshal(map[string]any{"id": "chatcmpl-wire", "object": "chat.completion.chunk", "created": 1767225600, "model": req.Model,
		"choices": []any{}, "usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})
	fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", b)
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
