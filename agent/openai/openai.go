// Package openai is an [agent.Model] for OpenAI-compatible chat
// completions APIs: the Vercel AI Gateway (the default), OpenAI,
// OpenRouter, Ollama, vLLM, LiteLLM and others. It streams every response
// (server-sent events) through the official Go SDK.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/agent/internal/modelhttp"
)

// Defaults for [Config]: the AI Gateway's OpenAI-compatible endpoint, and
// the model as the Gateway names it (provider/model).
const (
	DefaultBaseURL = "https://ai-gateway.vercel.sh/v1"
	DefaultModel   = "anthropic/claude-opus-4.8"
)

// Config configures a [Model]: the Model is required (e.g.
// "anthropic/claude-opus-4.8"); BaseURL defaults to DefaultBaseURL, and a
// zero MaxTokens (max_completion_tokens) leaves the bound to the server.
type Config = agent.ModelConfig

const provider = "OpenAI-compatible API"

// Model calls a chat completions API. It is safe for concurrent use.
type Model struct {
	svc       oai.ChatCompletionService
	caller    *modelhttp.Caller // retries; knows the model's id
	maxTokens int64             // 0: the server's
}

var _ agent.Model = (*Model)(nil)

// New returns a Model. It does no I/O.
func New(cfg Config) (*Model, error) {
	caller, err := modelhttp.NewCaller("openai", provider, &cfg, DefaultBaseURL, httpError)
	if err != nil {
		return nil, err
	}
	opts := []option.RequestOption{
		option.WithBaseURL(modelhttp.SDKBaseURL(cfg.BaseURL)),
		option.WithHTTPClient(modelhttp.HTTPClient()),
		option.WithMaxRetries(0), // modelhttp retries
		option.WithMiddleware(modelhttp.CheckEventStream(provider)),
	}
	if cfg.Key.Value != "" {
		opts = append(opts, option.WithAPIKey(cfg.Key.Value))
	}
	// The service, unlike openai.NewClient, reads nothing from the
	// environment: Config is the only source.
	return &Model{svc: oai.NewChatCompletionService(opts...), caller: caller, maxTokens: cfg.MaxTokens}, nil
}

// ID returns the model id.
func (m *Model) ID() string { return m.caller.Model }

// Generate streams one assistant turn.
func (m *Model) Generate(ctx context.Context, req *agent.Request, text func(string)) (*agent.Response, error) {
	params, err := m.params(req)
	if err != nil {
		return nil, err
	}
	var resp *agent.Response
	err = m.caller.Stream(ctx, text, func(ctx context.Context, emit func(string)) error {
		stream := m.svc.NewStreaming(ctx, params)
		defer stream.Close()
		var acc accumulator
		for stream.Next() {
			emit(acc.add(stream.Current()))
		}
		if err := stream.Err(); err != nil {
			return modelhttp.StreamError(provider, err)
		}
		if !acc.finished {
			return modelhttp.ErrStreamCut
		}
		resp = acc.response()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// params builds the request body.
func (m *Model) params(req *agent.Request) (oai.ChatCompletionNewParams, error) {
	p := oai.ChatCompletionNewParams{
		Model:         m.caller.Model,
		StreamOptions: oai.ChatCompletionStreamOptionsParam{IncludeUsage: oai.Bool(true)},
	}
	if m.maxTokens > 0 {
		p.MaxCompletionTokens = oai.Int(m.maxTokens)
	}
	if req.Instructions != "" {
		p.Messages = append(p.Messages, oai.SystemMessage(req.Instructions))
	}
	for _, msg := range req.Messages {
		switch msg.Role {
		case agent.RoleUser:
			p.Messages = append(p.Messages, oai.UserMessage(msg.Text))
		case agent.RoleAssistant:
			a := oai.ChatCompletionAssistantMessageParam{}
			if msg.Text != "" {
				a.Content.OfString = oai.String(msg.Text)
			}
			for _, c := range msg.ToolCalls {
				// Arguments that were not JSON (the model's mistake, already
				// answered with an error) go back as {}: gateways that
				// convert the call for another provider parse them.
				args := string(c.Input)
				if !json.Valid(c.Input) {
					args = "{}"
				}
				a.ToolCalls = append(a.ToolCalls, oai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{
						ID:       c.ID,
						Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: args},
					},
				})
			}
			p.Messages = append(p.Messages, oai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case agent.RoleTool:
			for _, r := range msg.ToolResults {
				p.Messages = append(p.Messages, oai.ToolMessage(r.Content, r.CallID))
			}
		default:
			return p, fmt.Errorf("openai: message with unknown role %q", msg.Role)
		}
	}
	for _, t := range req.Tools {
		schema, err := modelhttp.ToolSchema("openai", t)
		if err != nil {
			return p, err
		}
		p.Tools = append(p.Tools, oai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        t.Name,
			Description: oai.String(t.Description),
			Parameters:  shared.FunctionParameters(schema),
		}))
	}
	return p, nil
}

// httpError reads the HTTP error behind an SDK error.
func httpError(err error) *modelhttp.HTTPError {
	// An error event in the middle of a stream comes with the stream's
	// 200; its type or code says what it stands for.
	if se, ok := errors.AsType[*ssestream.StreamError](err); ok {
		var body struct {
			Error struct {
				Type string `json:"type"`
				Code any    `json:"code"`
			} `json:"error"`
		}
		_ = json.Unmarshal(se.Event.Data, &body)
		code, _ := body.Error.Code.(string)
		return &modelhttp.HTTPError{Status: modelhttp.StreamErrorStatus(code, body.Error.Type), Body: string(se.Event.Data)}
	}
	var e *oai.Error
	if !errors.As(err, &e) {
		return nil
	}
	return modelhttp.ResponseError(e.StatusCode, e.RawJSON(), e.Response)
}

// accumulator assembles a streamed turn: text, and tool calls from their
// deltas. A delta names its call by index; one with a new id at a used
// index starts a new call (some servers send every call at index 0).
type accumulator struct {
	text     strings.Builder
	calls    []*toolCall
	byIndex  map[int64]*toolCall
	usage    agent.Usage
	finish   string
	finished bool
}

type toolCall struct {
	id, name string
	args     strings.Builder
}

// add takes a chunk and returns its text.
func (a *accumulator) add(chunk oai.ChatCompletionChunk) string {
	if chunk.JSON.Usage.Valid() {
		a.usage = agent.Usage{InputTokens: chunk.Usage.PromptTokens, OutputTokens: chunk.Usage.CompletionTokens}
	}
	var text string
	for _, ch := range chunk.Choices {
		if ch.Index != 0 {
			continue // we ask for one choice
		}
		text += ch.Delta.Content + ch.Delta.Refusal // a refusal is what the user should read
		for _, d := range ch.Delta.ToolCalls {
			c := a.byIndex[d.Index]
			if c == nil || (d.ID != "" && c.id != "" && d.ID != c.id) {
				c = &toolCall{}
				a.calls = append(a.calls, c)
				if a.byIndex == nil {
					a.byIndex = make(map[int64]*toolCall)
				}
				a.byIndex[d.Index] = c
			}
			if d.ID != "" {
				c.id = d.ID
			}
			if d.Function.Name != "" {
				c.name = d.Function.Name
			}
			c.args.WriteString(d.Function.Arguments)
		}
		if ch.FinishReason != "" {
			a.finish = ch.FinishReason
			a.finished = true
		}
	}
	a.text.WriteString(text)
	return text
}

func (a *accumulator) response() *agent.Response {
	r := &agent.Response{
		Message: agent.Message{Role: agent.RoleAssistant, Text: a.text.String()},
		Usage:   a.usage,
	}
	for _, c := range a.calls {
		args := strings.TrimSpace(c.args.String())
		if args == "" {
			args = "{}"
		}
		r.Message.ToolCalls = append(r.Message.ToolCalls, agent.ToolCall{ID: c.id, Name: c.name, Input: json.RawMessage(args)})
	}
	switch a.finish {
	case "stop":
		r.Finish = agent.FinishStop
	case "tool_calls", "function_call":
		r.Finish = agent.FinishToolCalls
	case "length":
		r.Finish = agent.FinishLength
	case "content_filter":
		r.Finish = agent.FinishRefusal
	default:
		r.Finish = agent.FinishOther
	}
	return r
}
