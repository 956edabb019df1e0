package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/agent/internal/fakeapi"
	"github.com/sandpiper-bot/sandpiper/sandbox"
)

const (
	testModel = "claude-opus-4-8"
	testKey   = "sk-ant-test-0123456789abcdef"
)

func messageStart(in int) string {
	return fakeapi.Event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_1", "type": "message", "role": "assistant", "model": testModel, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": in, "output_tokens": 1},
	}})
}

func blockStart(i int, block map[string]any) string {
	return fakeapi.Event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": block})
}

func textDelta(i int, s string) string {
	return fakeapi.Event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": s}})
}

func jsonDelta(i int, s string) string {
	return fakeapi.Event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": s}})
}

func blockStop(i int) string {
	return fakeapi.Event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
}

func messageDelta(stop string, out int) string {
	return fakeapi.Event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": out}})
}

var (
	ping        = fakeapi.Event("ping", map[string]any{"type": "ping"})
	messageStop = fakeapi.Event("message_stop", map[string]any{"type": "message_stop"})
)

var toolCallStream = []string{
	messageStart(100),
	blockStart(0, map[string]any{"type": "text", "text": ""}),
	ping,
	textDelta(0, "Let me compute."),
	blockStop(0),
	blockStart(1, map[string]any{"type": "tool_use", "id": "toolu_1", "name": "executeCode", "input": map[string]any{}}),
	jsonDelta(1, ""),
	jsonDelta(1, `{"code": "print(5 + 5`),
	jsonDelta(1, ` - 84**3)"}`),
	blockStop(1),
	messageDelta("tool_use", 20),
	messageStop,
}

var answerStream = []string{
	messageStart(150),
	blockStart(0, map[string]any{"type": "text", "text": ""}),
	textDelta(0, "5 + 5 − 84³ = "),
	textDelta(0, "**-592694**"),
	blockStop(0),
	messageDelta("end_turn", 9),
	messageStop,
}

type runner struct{ codes []string }

func (r *runner) Run(_ context.Context, req sandbox.Request) (*sandbox.Result, error) {
	r.codes = append(r.codes, req.Code)
	return &sandbox.Result{Stdout: []byte("-592694\n"), StdoutSize: 8}, nil
}

func newModel(t *testing.T, srv *fakeapi.Server, key agent.APIKey) *Model {
	t.Helper()
	m, err := New(Config{
		BaseURL: srv.URL,
		Key:     key,
		Model:   testModel,
		Retry:   agent.RetryPolicy{MaxRetries: 2, BaseDelay: time.Millisecond},
		Logger:  slog.New(slog.NewTextHandler(t.Output(), nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestToolCallRoundTrip runs the agent loop against the fake API and
// checks the exact body that carries the tool result back.
func TestToolCallRoundTrip(t *testing.T) {
	srv := fakeapi.New(t, fakeapi.SSE(toolCallStream...), fakeapi.SSE(answerStream...))
	run := &runner{}
	tool := agent.NewExecuteCode(run, agent.ExecuteCodeOptions{Runtime: agent.Runtime{Python: "3.13.1"}})
	a := &agent.Agent{Model: newModel(t, srv, agent.APIKey{Value: testKey, Source: "ANTHROPIC_API_KEY"}), Tools: []agent.Tool{tool}}

	var deltas []string
	obs := agent.ObserverFuncs{OnAnswerDelta: func(e agent.DeltaEvent) { deltas = append(deltas, e.Text) }}
	history := []agent.Message{agent.UserMessage("What is 5 + 5 minus 84 cubed?")}
	out, err := a.Run(t.Context(), history, agent.RunOptions{Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	if out.Answer != "5 + 5 − 84³ = **-592694**" || out.Stop != agent.StopAnswered || out.Steps != 2 {
		t.Errorf("outcome = %+v", out)
	}
	if out.Usage != (agent.Usage{InputTokens: 250, OutputTokens: 29}) {
		t.Errorf("usage = %+v", out.Usage)
	}
	if got, want := strings.Join(deltas, "|"), "Let me compute.|5 + 5 − 84³ = |**-592694**"; got != want {
		t.Errorf("deltas = %q, want %q", got, want)
	}
	if len(run.codes) != 1 || run.codes[0] != "print(5 + 5 - 84**3)" {
		t.Errorf("ran %q", run.codes)
	}

	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for _, r := range reqs {
		if r.Method != "POST" || r.Path != "/v1/messages" {
			t.Errorf("request %s %s", r.Method, r.Path)
		}
		// This SDK version sends the key as a bearer token, which the
		// API and the AI Gateway both accept.
		if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
			t.Errorf("Authorization = %q", got)
		}
		if got := r.Header.Get("Anthropic-Version"); got == "" {
			t.Error("no Anthropic-Version header")
		}
	}
	spec := tool.Spec()
	fakeapi.JSONEqual(t, "second request", reqs[1].Body, `{
		"model": "claude-opus-4-8",
		"max_tokens": 4096,
		"stream": true,
		"system": [{"type": "text", "text": `+jsonString(agent.DefaultInstructions)+`}],
		"messages": [
			{"role": "user", "content": [{"type": "text", "text": "What is 5 + 5 minus 84 cubed?"}]},
			{"role": "assistant", "content": [
				{"type": "text", "text": "Let me compute."},
				{"type": "tool_use", "id": "toolu_1", "name": "executeCode", "input": {"code": "print(5 + 5 - 84**3)"}}
			]},
			{"role": "user", "content": [
				{"type": "tool_result", "tool_use_id": "toolu_1", "is_error": false,
				 "content": [{"type": "text", "text": "{\"output\":\"-592694\\n\",\"stderr\":\"\",\"exitCode\":0}"}]}
			]}
		],
		"tools": [{"name": "executeCode", "description": `+jsonString(spec.Description)+`,
			"input_schema": {"type": "object", "properties": {"code": {"type": "string", "description": "Python 3 source code, run as python3 -c. Print every result you need to see, e.g. print(5 + 5)."}},
			"required": ["code"], "additionalProperties": false}}]
	}`)

	// The next turn: the question follows the answer; a step that ended
	// in tool results is merged with the next question into one user turn.
	m := newModel(t, fakeapi.New(t, fakeapi.SSE(answerStream...)), agent.APIKey{Value: testKey})
	next := append(append(history, out.Messages[:2]...), agent.UserMessage("And squared?"))
	p, err := m.params(&agent.Request{Messages: next})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(p)
	var got struct {
		Messages []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	json.Unmarshal(body, &got)
	if len(got.Messages) != 3 || got.Messages[2].Role != "user" || len(got.Messages[2].Content) != 2 ||
		got.Messages[2].Content[0]["type"] != "tool_result" || got.Messages[2].Content[1]["text"] != "And squared?" {
		t.Errorf("merged messages = %s", fakeapi.Pretty(body))
	}
}

// TestInvalidToolInput sends a call whose input was not JSON back as {}.
func TestInvalidToolInput(t *testing.T) {
	m := newModel(t, fakeapi.New(t), agent.APIKey{Value: testKey})
	p, err := m.params(&agent.Request{Messages: []agent.Message{
		agent.UserMessage("q"),
		{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "t1", Name: "executeCode", Input: json.RawMessage(`{"code": "pri`)}}},
		{Role: agent.RoleTool, ToolResults: []agent.ToolResult{{CallID: "t1", Name: "executeCode", Content: "Error: invalid input", IsError: true}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(p)
	fakeapi.JSONEqual(t, "body", body, `{"model": "claude-opus-4-8", "max_tokens": 4096, "messages": [
		{"role": "user", "content": [{"type": "text", "text": "q"}]},
		{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "executeCode", "input": {}}]},
		{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": true, "content": [{"type": "text", "text": "Error: invalid input"}]}]}
	]}`)
}

// TestNoBlankTextBlocks: the API refuses empty and whitespace-only text
// blocks, which a silent program's result and a model's "\n\n" before a
// tool call would otherwise become.
func TestNoBlankTextBlocks(t *testing.T) {
	m := newModel(t, fakeapi.New(t), agent.APIKey{Value: testKey})
	p, err := m.params(&agent.Request{Messages: []agent.Message{
		agent.UserMessage(""),
		{Role: agent.RoleAssistant, Text: "\n\n", ToolCalls: []agent.ToolCall{{ID: "t1", Name: "executeCode", Input: json.RawMessage(`{"code": "x = 1"}`)}}},
		{Role: agent.RoleTool, ToolResults: []agent.ToolResult{{CallID: "t1", Name: "executeCode", Content: ""}}},
		{Role: agent.RoleAssistant, Text: " "},
		agent.UserMessage("next"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(p)
	fakeapi.JSONEqual(t, "body", body, `{"model": "claude-opus-4-8", "max_tokens": 4096, "messages": [
		{"role": "user", "content": [{"type": "text", "text": "(empty message)"}]},
		{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "executeCode", "input": {"code": "x = 1"}}]},
		{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": false, "content": [{"type": "text", "text": "(no output)"}]}]},
		{"role": "assistant", "content": [{"type": "text", "text": "(no answer)"}]},
		{"role": "user", "content": [{"type": "text", "text": "next"}]}
	]}`)
}

func TestErrors(t *testing.T) {
	overloaded := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	tests := []struct {
		name      string
		replies   []http.HandlerFunc
		key       agent.APIKey
		wantErr   string
		wantNot   string
		wantReqs  int
		wantCode  int
		wantDelay time.Duration
	}{
		{
			name:     "401 names the variable",
			replies:  []http.HandlerFunc{fakeapi.Status(401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)},
			key:      agent.APIKey{Value: testKey, Source: "ANTHROPIC_API_KEY"},
			wantErr:  "model: Anthropic API: 401 Unauthorized: invalid x-api-key. The API rejected the key from ANTHROPIC_API_KEY",
			wantNot:  testKey,
			wantReqs: 1,
			wantCode: 401,
		},
		{
			name: "429 then success, after Retry-After",
			replies: []http.HandlerFunc{
				fakeapi.Status(429, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, "Retry-After", "0.3"),
				fakeapi.SSE(answerStream...),
			},
			wantReqs:  2,
			wantDelay: 300 * time.Millisecond,
		},
		{
			name:     "500s until the retries give up",
			replies:  []http.HandlerFunc{fakeapi.Status(500, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`)},
			wantErr:  "model: Anthropic API: 500 Internal Server Error: Internal server error (after 2 retries). The API is failing on its side; try again later.",
			wantReqs: 3,
			wantCode: 500,
		},
		{
			name:     "529 overloaded until the retries give up",
			replies:  []http.HandlerFunc{fakeapi.Status(529, overloaded)},
			wantErr:  "model: Anthropic API: 529 Overloaded: Overloaded (after 2 retries). The API is overloaded; try again shortly.",
			wantReqs: 3,
			wantCode: 529,
		},
		{
			name: "an overloaded error event before any text is retried",
			replies: []http.HandlerFunc{
				fakeapi.SSE(messageStart(10), "event: error\ndata: "+overloaded+"\n\n"),
				fakeapi.SSE(answerStream...),
			},
			wantReqs: 2,
		},
		{
			name:     "an error event after text is not retried",
			replies:  []http.HandlerFunc{fakeapi.SSE(messageStart(10), blockStart(0, map[string]any{"type": "text", "text": ""}), textDelta(0, "Hi"), "event: error\ndata: "+overloaded+"\n\n")},
			wantErr:  "model: Anthropic API: 529 Overloaded: Overloaded.",
			wantReqs: 1,
			wantCode: 529,
		},
		{
			name:     "an invalid-request error event is not retried",
			replies:  []http.HandlerFunc{fakeapi.SSE(messageStart(10), "event: error\ndata: "+`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long"}}`+"\n\n")},
			wantErr:  "model: Anthropic API: 400 Bad Request: prompt is too long",
			wantReqs: 1,
			wantCode: 400,
		},
		{
			name:     "malformed JSON",
			replies:  []http.HandlerFunc{fakeapi.SSE(messageStart(10), "event: content_block_start\ndata: {\"type\": \"content_block_start\", \"index\": \n\n")},
			wantErr:  "model: Anthropic API: malformed response: ",
			wantReqs: 1,
		},
		{
			name:     "events out of order",
			replies:  []http.HandlerFunc{fakeapi.SSE(messageStart(10), textDelta(3, "Hi"))},
			wantErr:  "model: Anthropic API: malformed response: ",
			wantReqs: 1,
		},
		{
			name:     "stream cut after text is not retried",
			replies:  []http.HandlerFunc{fakeapi.CutSSE(messageStart(10), blockStart(0, map[string]any{"type": "text", "text": ""}), textDelta(0, "The answer"))},
			wantErr:  "model: Anthropic API: the connection broke off in the middle of the response (unexpected EOF). Try again.",
			wantReqs: 1,
		},
		{
			name:     "stream that ends without message_stop",
			replies:  []http.HandlerFunc{fakeapi.SSE(messageStart(10), blockStart(0, map[string]any{"type": "text", "text": ""}), textDelta(0, "The answer"))},
			wantErr:  "the response stream ended before the response was complete",
			wantReqs: 1,
		},
		{
			name:     "stream cut before any text is retried",
			replies:  []http.HandlerFunc{fakeapi.CutSSE(messageStart(10)), fakeapi.SSE(answerStream...)},
			wantReqs: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fakeapi.New(t, tt.replies...)
			key := tt.key
			if key.Value == "" {
				key = agent.APIKey{Value: testKey, Source: "ANTHROPIC_API_KEY"}
			}
			m := newModel(t, srv, key)
			t0 := time.Now()
			resp, err := m.Generate(t.Context(), &agent.Request{Messages: []agent.Message{agent.UserMessage("q")}}, func(string) {})
			elapsed := time.Since(t0)
			if n := len(srv.Requests()); n != tt.wantReqs {
				t.Errorf("%d requests, want %d", n, tt.wantReqs)
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Generate: %v", err)
				}
				if resp.Message.Text != "5 + 5 − 84³ = **-592694**" || resp.Finish != agent.FinishStop {
					t.Errorf("response = %+v", resp)
				}
				if elapsed < tt.wantDelay {
					t.Errorf("retried after %v, want at least %v", elapsed, tt.wantDelay)
				}
				return
			}
			if err == nil {
				t.Fatalf("Generate succeeded: %+v", resp)
			}
			t.Logf("error: %v", err)
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error:\n%v\nwant it to contain\n%s", err, tt.wantErr)
			}
			if tt.wantNot != "" && strings.Contains(err.Error(), tt.wantNot) {
				t.Errorf("error %q contains %q", err, tt.wantNot)
			}
			var apiErr *agent.APIError
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tt.wantCode {
				t.Errorf("error %#v: want an *agent.APIError with status %d", err, tt.wantCode)
			}
		})
	}
}

func TestNoEnvironment(t *testing.T) {
	// The SDK's client reads ANTHROPIC_* variables; this provider must not.
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1/")
	t.Setenv("ANTHROPIC_API_KEY", "sk-from-env")
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Api-Key: leaked")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "token-from-env")
	srv := fakeapi.New(t, fakeapi.SSE(answerStream...))
	m := newModel(t, srv, agent.APIKey{Value: testKey})
	if _, err := m.Generate(t.Context(), &agent.Request{Messages: []agent.Message{agent.UserMessage("q")}}, nil); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[0]
	if r.Header.Get("Authorization") != "Bearer "+testKey || r.Header.Get("X-Api-Key") != "" {
		t.Errorf("headers = %v", r.Header)
	}
}
