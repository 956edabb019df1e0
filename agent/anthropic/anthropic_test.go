package anthropic

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/agent/internal/fakeapi"
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
	tool, conv := fakeapi.RoundTrip(t, newModel(t, srv, agent.APIKey{Value: testKey, Source: "ANTHROPIC_API_KEY"}))

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
	next := append(conv[:3:3], agent.UserMessage("And squared?"))
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
	tests := []fakeapi.ErrorCase{
		{
			Name:     "401 names the variable",
			Replies:  []http.HandlerFunc{fakeapi.Status(401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)},
			Key:      agent.APIKey{Value: testKey, Source: "ANTHROPIC_API_KEY"},
			WantErr:  "model: Anthropic API: 401 Unauthorized: invalid x-api-key. The API rejected the key from ANTHROPIC_API_KEY",
			WantNot:  testKey,
			WantReqs: 1,
			WantCode: 401,
		},
		{
			Name: "429 then success, after Retry-After",
			Replies: []http.HandlerFunc{
				fakeapi.Status(429, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, "Retry-After", "0.3"),
				fakeapi.SSE(answerStream...),
			},
			WantReqs:  2,
			WantDelay: 300 * time.Millisecond,
		},
		{
			Name:     "500s until the retries give up",
			Replies:  []http.HandlerFunc{fakeapi.Status(500, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`)},
			WantErr:  "model: Anthropic API: 500 Internal Server Error: Internal server error (after 2 retries). The API is failing on its side; try again later.",
			WantReqs: 3,
			WantCode: 500,
		},
		{
			Name:     "529 overloaded until the retries give up",
			Replies:  []http.HandlerFunc{fakeapi.Status(529, overloaded)},
			WantErr:  "model: Anthropic API: 529 Overloaded: Overloaded (after 2 retries). The API is overloaded; try again shortly.",
			WantReqs: 3,
			WantCode: 529,
		},
		{
			Name: "an overloaded error event before any text is retried",
			Replies: []http.HandlerFunc{
				fakeapi.SSE(messageStart(10), "event: error\ndata: "+overloaded+"\n\n"),
				fakeapi.SSE(answerStream...),
			},
			WantReqs: 2,
		},
		{
			Name:     "an error event after text is not retried",
			Replies:  []http.HandlerFunc{fakeapi.SSE(messageStart(10), blockStart(0, map[string]any{"type": "text", "text": ""}), textDelta(0, "Hi"), "event: error\ndata: "+overloaded+"\n\n")},
			WantErr:  "model: Anthropic API: 529 Overloaded: Overloaded.",
			WantReqs: 1,
			WantCode: 529,
		},
		{
			Name:     "an invalid-request error event is not retried",
			Replies:  []http.HandlerFunc{fakeapi.SSE(messageStart(10), "event: error\ndata: "+`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long"}}`+"\n\n")},
			WantErr:  "model: Anthropic API: 400 Bad Request: prompt is too long",
			WantReqs: 1,
			WantCode: 400,
		},
		{
			Name:     "malformed JSON",
			Replies:  []http.HandlerFunc{fakeapi.SSE(messageStart(10), "event: content_block_start\ndata: {\"type\": \"content_block_start\", \"index\": \n\n")},
			WantErr:  "model: Anthropic API: malformed response: ",
			WantReqs: 1,
		},
		{
			Name:     "events out of order",
			Replies:  []http.HandlerFunc{fakeapi.SSE(messageStart(10), textDelta(3, "Hi"))},
			WantErr:  "model: Anthropic API: malformed response: ",
			WantReqs: 1,
		},
		{
			Name:     "stream cut after text is not retried",
			Replies:  []http.HandlerFunc{fakeapi.CutSSE(messageStart(10), blockStart(0, map[string]any{"type": "text", "text": ""}), textDelta(0, "The answer"))},
			WantErr:  "model: Anthropic API: the connection broke off in the middle of the response (unexpected EOF). Try again.",
			WantReqs: 1,
		},
		{
			Name:     "stream that ends without message_stop",
			Replies:  []http.HandlerFunc{fakeapi.SSE(messageStart(10), blockStart(0, map[string]any{"type": "text", "text": ""}), textDelta(0, "The answer"))},
			WantErr:  "the response stream ended before the response was complete",
			WantReqs: 1,
		},
		{
			Name:     "stream cut before any text is retried",
			Replies:  []http.HandlerFunc{fakeapi.CutSSE(messageStart(10)), fakeapi.SSE(answerStream...)},
			WantReqs: 2,
		},
	}
	fakeapi.TestErrors(t, tests, agent.APIKey{Value: testKey, Source: "ANTHROPIC_API_KEY"}, func(t *testing.T, srv *fakeapi.Server, key agent.APIKey) agent.Model {
		return newModel(t, srv, key)
	})
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

// TestDeltasWhileStreaming: the observer gets the first words while the
// rest of the answer is still on its way.
func TestDeltasWhileStreaming(t *testing.T) {
	fakeapi.DeltasWhileStreaming(t, answerStream[:3], answerStream[3:], func(t *testing.T, srv *fakeapi.Server) agent.Model {
		return newModel(t, srv, agent.APIKey{Value: testKey})
	})
}
