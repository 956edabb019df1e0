package openai

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
)

const (
	testModel = "anthropic/claude-opus-4.8"
	testKey   = "sk-test-0123456789abcdef"
)

// chunk is one chat.completion.chunk event with a delta for choice 0.
func chunk(delta map[string]any, finish string) string {
	choice := map[string]any{"index": 0, "delta": delta, "finish_reason": nil}
	if finish != "" {
		choice["finish_reason"] = finish
	}
	return fakeapi.Data(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1767225600, "model": testModel,
		"choices": []any{choice},
	})
}

func usageChunk(in, out int) string {
	return fakeapi.Data(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1767225600, "model": testModel,
		"choices": []any{}, "usage": map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
	})
}

func text(s string) map[string]any { return map[string]any{"content": s} }

const done = "data: [DONE]\n\n"

// toolCallStream is a turn that says a few words, then calls executeCode
// with its arguments split across three chunks.
var toolCallStream = []string{
	chunk(map[string]any{"role": "assistant", "content": ""}, ""),
	chunk(text("Let me compute."), ""),
	chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "call_1", "type": "function", "function": map[string]any{"name": "executeCode", "arguments": ""}}}}, ""),
	chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": `{"code": "print(5 + 5`}}}}, ""),
	chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": ` - 84**3)"}`}}}}, ""),
	chunk(map[string]any{}, "tool_calls"),
	usageChunk(100, 20),
	done,
}

var answerStream = []string{
	chunk(map[string]any{"role": "assistant", "content": ""}, ""),
	chunk(text("5 + 5 − 84³ = "), ""),
	chunk(text("**-592694**"), ""),
	chunk(map[string]any{}, "stop"),
	usageChunk(150, 9),
	done,
}

func newModel(t *testing.T, srv *fakeapi.Server, key agent.APIKey) *Model {
	t.Helper()
	m, err := New(Config{
		BaseURL:   srv.URL + "/v1",
		Key:       key,
		Model:     testModel,
		MaxTokens: 2048,
		Retry:     agent.RetryPolicy{MaxRetries: 2, BaseDelay: time.Millisecond},
		Logger:    slog.New(slog.NewTextHandler(t.Output(), nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestToolCallRoundTrip runs the agent loop against the fake API: the
// model calls executeCode, gets the result back in the exact shape chat
// completions expect, and answers.
func TestToolCallRoundTrip(t *testing.T) {
	srv := fakeapi.New(t, fakeapi.SSE(toolCallStream...), fakeapi.SSE(answerStream...))
	tool, _ := fakeapi.RoundTrip(t, newModel(t, srv, agent.APIKey{Value: testKey, Source: "AI_GATEWAY_API_KEY"}))

	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for _, r := range reqs {
		if r.Method != "POST" || r.Path != "/v1/chat/completions" {
			t.Errorf("request %s %s", r.Method, r.Path)
		}
		if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
			t.Errorf("Authorization = %q", got)
		}
	}
	spec := tool.Spec()
	tools := `[{"type": "function", "function": {"name": "executeCode", "description": ` + jsonString(spec.Description) + `,
		"parameters": {"type": "object", "properties": {"code": {"type": "string", "description": "Python 3 source code, run as python3 -c. Print every result you need to see, e.g. print(5 + 5)."}},
		"required": ["code"], "additionalProperties": false}}}]`
	fakeapi.JSONEqual(t, "second request", reqs[1].Body, `{
		"model": "anthropic/claude-opus-4.8",
		"stream": true,
		"stream_options": {"include_usage": true},
		"max_completion_tokens": 2048,
		"messages": [
			{"role": "system", "content": `+jsonString(agent.DefaultInstructions)+`},
			{"role": "user", "content": "What is 5 + 5 minus 84 cubed?"},
			{"role": "assistant", "content": "Let me compute.", "tool_calls": [
				{"id": "call_1", "type": "function", "function": {"name": "executeCode", "arguments": "{\"code\": \"print(5 + 5 - 84**3)\"}"}}
			]},
			{"role": "tool", "tool_call_id": "call_1", "content": "{\"output\":\"-592694\\n\",\"stderr\":\"\",\"exitCode\":0}"}
		],
		"tools": `+tools+`
	}`)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestParallelToolCalls assembles two calls whose deltas interleave.
func TestParallelToolCalls(t *testing.T) {
	call := func(i int, id, name, args string) map[string]any {
		c := map[string]any{"index": i, "function": map[string]any{"arguments": args}}
		if id != "" {
			c["id"], c["type"] = id, "function"
			c["function"].(map[string]any)["name"] = name
		}
		return map[string]any{"tool_calls": []any{c}}
	}
	srv := fakeapi.New(t, fakeapi.SSE(
		chunk(call(0, "call_a", "executeCode", `{"code":`), ""),
		chunk(call(1, "call_b", "executeCode", `{"code":`), ""),
		chunk(call(0, "", "", ` "print(1)"}`), ""),
		chunk(call(1, "", "", ` "print(2)"}`), ""),
		// A server that numbers every call 0 still gets a new call.
		chunk(call(0, "call_c", "other", `{}`), ""),
		chunk(map[string]any{}, "tool_calls"),
		done,
	))
	m := newModel(t, srv, agent.APIKey{Value: testKey})
	resp, err := m.Generate(t.Context(), &agent.Request{Messages: []agent.Message{agent.UserMessage("q")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []agent.ToolCall{
		{ID: "call_a", Name: "executeCode", Input: json.RawMessage(`{"code": "print(1)"}`)},
		{ID: "call_b", Name: "executeCode", Input: json.RawMessage(`{"code": "print(2)"}`)},
		{ID: "call_c", Name: "other", Input: json.RawMessage(`{}`)},
	}
	got := resp.Message.ToolCalls
	if len(got) != len(want) {
		t.Fatalf("calls = %+v", got)
	}
	for i := range want {
		if got[i].ID != want[i].ID || got[i].Name != want[i].Name || string(got[i].Input) != string(want[i].Input) {
			t.Errorf("call %d = %s %s %s, want %s %s %s", i, got[i].ID, got[i].Name, got[i].Input, want[i].ID, want[i].Name, want[i].Input)
		}
	}
	if resp.Finish != agent.FinishToolCalls {
		t.Errorf("finish = %q", resp.Finish)
	}
}

func TestErrors(t *testing.T) {
	tests := []fakeapi.ErrorCase{
		{
			Name:     "401 names the variable",
			Replies:  []http.HandlerFunc{fakeapi.Status(401, `{"error":{"message":"Invalid API key: `+testKey+`","type":"authentication_error"}}`)},
			Key:      agent.APIKey{Value: testKey, Source: "SANDPIPER_MODEL_API_KEY"},
			WantErr:  "model: OpenAI-compatible API: 401 Unauthorized: Invalid API key: [redacted]. The API rejected the key from SANDPIPER_MODEL_API_KEY",
			WantNot:  testKey,
			WantReqs: 1,
			WantCode: 401,
		},
		{
			Name:     "401 with an OIDC token says how to refresh it",
			Replies:  []http.HandlerFunc{fakeapi.Status(401, `{"error":{"message":"OIDC token expired","type":"authentication_error"}}`)},
			Key:      agent.APIKey{Value: "eyJhbGciOi.payload.sig", Source: "VERCEL_OIDC_TOKEN"},
			WantErr:  "401 Unauthorized: OIDC token expired. The key came from VERCEL_OIDC_TOKEN: these tokens expire 12 hours after `vercel env pull` wrote them; run `vercel env pull` again",
			WantReqs: 1,
			WantCode: 401,
		},
		{
			Name: "429 then success, after Retry-After",
			Replies: []http.HandlerFunc{
				fakeapi.Status(429, `{"error":{"message":"slow down"}}`, "Retry-After", "0.3"),
				fakeapi.SSE(answerStream...),
			},
			WantReqs:  2,
			WantDelay: 300 * time.Millisecond,
		},
		{
			Name:     "an error event in the stream is the request's fault, not retried",
			Replies:  []http.HandlerFunc{fakeapi.SSE(fakeapi.Data(map[string]any{"error": map[string]any{"message": "This model's maximum context length is 128000 tokens.", "type": "invalid_request_error", "code": "context_length_exceeded"}}))},
			WantErr:  "model: OpenAI-compatible API: 400 Bad Request: This model's maximum context length is 128000 tokens.",
			WantNot:  "reachable",
			WantReqs: 1,
			WantCode: 400,
		},
		{
			Name: "a rate-limit error event is retried",
			Replies: []http.HandlerFunc{
				fakeapi.SSE(fakeapi.Data(map[string]any{"error": map[string]any{"message": "slow down", "type": "requests", "code": "rate_limit_exceeded"}})),
				fakeapi.SSE(answerStream...),
			},
			WantReqs: 2,
		},
		{
			Name:     "500s until the retries give up",
			Replies:  []http.HandlerFunc{fakeapi.Status(500, `{"error":{"message":"internal error"}}`)},
			WantErr:  "model: OpenAI-compatible API: 500 Internal Server Error: internal error (after 2 retries). The API is failing on its side; try again later.",
			WantReqs: 3,
			WantCode: 500,
		},
		{
			Name:     "a long Retry-After is not waited for",
			Replies:  []http.HandlerFunc{fakeapi.Status(429, `{"error":{"message":"quota"}}`, "Retry-After", "3600")},
			WantErr:  "429 Too Many Requests: quota. The API asks to wait 1h0m0s before trying again; try later.",
			WantReqs: 1,
			WantCode: 429,
		},
		{
			Name:     "malformed JSON",
			Replies:  []http.HandlerFunc{fakeapi.SSE(chunk(text("Hi"), ""), "data: {\"id\": \"chatcmpl-1\", \"choices\": [\n\n")},
			WantErr:  "model: OpenAI-compatible API: malformed response: ",
			WantReqs: 1,
		},
		{
			Name:     "stream cut after text is not retried",
			Replies:  []http.HandlerFunc{fakeapi.CutSSE(chunk(text("The answer"), ""))},
			WantErr:  "model: OpenAI-compatible API: the connection broke off in the middle of the response (unexpected EOF). Try again.",
			WantReqs: 1,
		},
		{
			Name:     "stream that ends without a finish reason",
			Replies:  []http.HandlerFunc{fakeapi.SSE(chunk(text("The answer"), ""))},
			WantErr:  "the response stream ended before the response was complete. The connection was probably lost; try again.",
			WantReqs: 1,
		},
		{
			Name:     "stream cut before any text is retried",
			Replies:  []http.HandlerFunc{fakeapi.CutSSE(chunk(map[string]any{"role": "assistant"}, "")), fakeapi.SSE(answerStream...)},
			WantReqs: 2,
		},
		{
			Name: "a web page instead of an event stream",
			Replies: []http.HandlerFunc{func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.Write([]byte("<html>Welcome</html>"))
			}},
			WantErr:  "200 OK: the response is text/html, not an event stream. Check that the base URL points at the API itself.",
			WantReqs: 1,
			WantCode: 200,
		},
		{
			Name:     "404 points at the model id and base URL",
			Replies:  []http.HandlerFunc{fakeapi.Status(404, `{"error":{"message":"model not found"}}`)},
			WantErr:  `404 Not Found: model not found. Check the model id "anthropic/claude-opus-4.8" and the base URL`,
			WantReqs: 1,
			WantCode: 404,
		},
	}
	fakeapi.TestErrors(t, tests, agent.APIKey{Value: testKey, Source: "AI_GATEWAY_API_KEY"}, func(t *testing.T, srv *fakeapi.Server, key agent.APIKey) agent.Model {
		return newModel(t, srv, key)
	})
}

func TestConnectionRefused(t *testing.T) {
	srv := fakeapi.New(t)
	url := srv.URL
	srv.Close()
	m, err := New(Config{BaseURL: url, Key: agent.APIKey{Value: testKey}, Model: testModel, Retry: agent.RetryPolicy{MaxRetries: 1, BaseDelay: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Generate(t.Context(), &agent.Request{Messages: []agent.Message{agent.UserMessage("q")}}, nil)
	if err == nil || !strings.Contains(err.Error(), "(after 1 retry). Check that "+url+" is reachable") {
		t.Errorf("err = %v", err)
	}
}

func TestCancel(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := fakeapi.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(chunk(text("thinking"), "")))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	m := newModel(t, srv, agent.APIKey{Value: testKey})
	ctx, cancel := context.WithCancel(t.Context())
	t0 := time.Now()
	_, err := m.Generate(ctx, &agent.Request{Messages: []agent.Message{agent.UserMessage("q")}}, func(string) { cancel() })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestNoEnvironment(t *testing.T) {
	// The SDK's client reads OPENAI_* variables; this provider must not.
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/")
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Leak: yes")
	srv := fakeapi.New(t, fakeapi.SSE(answerStream...))
	m := newModel(t, srv, agent.APIKey{Value: testKey})
	if _, err := m.Generate(t.Context(), &agent.Request{Messages: []agent.Message{agent.UserMessage("q")}}, nil); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[0]
	if r.Header.Get("Authorization") != "Bearer "+testKey || r.Header.Get("X-Leak") != "" {
		t.Errorf("headers = %v", r.Header)
	}
}

// TestInvalidArgumentsGoBackAsEmptyObject: arguments that were not JSON
// are sent back as {}, which gateways converting the call can parse.
func TestInvalidArgumentsGoBackAsEmptyObject(t *testing.T) {
	m := newModel(t, fakeapi.New(t), agent.APIKey{Value: testKey})
	p, err := m.params(&agent.Request{Messages: []agent.Message{
		agent.UserMessage("q"),
		{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "c1", Name: "executeCode", Input: json.RawMessage(`{"code": "pri`)}}},
		{Role: agent.RoleTool, ToolResults: []agent.ToolResult{{CallID: "c1", Name: "executeCode", Content: "Error: invalid input", IsError: true}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(p)
	if !strings.Contains(string(body), `"arguments":"{}"`) {
		t.Errorf("body = %s", fakeapi.Pretty(body))
	}
}

// TestRefusalTextIsTheAnswer: a refusal streamed in delta.refusal is what
// the user reads.
func TestRefusalTextIsTheAnswer(t *testing.T) {
	srv := fakeapi.New(t, fakeapi.SSE(
		fakeapi.Data(map[string]any{"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "refusal": "I can't help with that."}}}}),
		fakeapi.Data(map[string]any{"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "content_filter"}}}),
		"data: [DONE]\n\n",
	))
	resp, err := newModel(t, srv, agent.APIKey{Value: testKey}).Generate(t.Context(), &agent.Request{Messages: []agent.Message{agent.UserMessage("q")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Text != "I can't help with that." || resp.Finish != agent.FinishRefusal {
		t.Errorf("response = %+v", resp)
	}
}

// TestBrokenAnswerIsAskedAgain: a stream cut after text went out is not
// retried by the provider, but the agent runs the step again, and the
// terminal or Slack gets the whole answer.
func TestBrokenAnswerIsAskedAgain(t *testing.T) {
	srv := fakeapi.New(t, fakeapi.CutSSE(chunk(text("The ans"), "")), fakeapi.SSE(answerStream...))
	a := &agent.Agent{Model: newModel(t, srv, agent.APIKey{Value: testKey})}
	var deltas []string
	retried := false
	obs := agent.ObserverFuncs{
		OnAnswerDelta: func(e agent.DeltaEvent) { deltas = append(deltas, e.Text) },
		OnStepStarted: func(e agent.StepEvent) {
			if e.Retry > 0 {
				retried, deltas = true, nil // discard what was streamed
			}
		},
	}
	out, err := a.Run(t.Context(), []agent.Message{agent.UserMessage("q")}, agent.RunOptions{Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	if out.Answer != "5 + 5 − 84³ = **-592694**" || !retried || strings.Join(deltas, "") != out.Answer || len(srv.Requests()) != 2 {
		t.Errorf("answer %q, retried %v, deltas %q, %d requests", out.Answer, retried, deltas, len(srv.Requests()))
	}
}

// TestDeltasWhileStreaming: the observer gets the first words while the
// rest of the answer is still on its way.
func TestDeltasWhileStreaming(t *testing.T) {
	fakeapi.DeltasWhileStreaming(t, answerStream[:2], answerStream[2:], func(t *testing.T, srv *fakeapi.Server) agent.Model {
		return newModel(t, srv, agent.APIKey{Value: testKey})
	})
}
