// Package anthropic is an [agent.Model] for the Anthropic Messages API
// (api.anthropic.com, or the AI Gateway's Anthropic-compatible endpoint). It
// streams every response (server-sent events) through the official Go SDK.
package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/agent/internal/modelhttp"
)

// Defaults for [Config].
const (
	DefaultBaseURL = "https://api.anthropic.com" // the client appends /v1/messages
	DefaultModel   = "claude-opus-4-8"           // as Anthropic's API names it
	// DefaultMaxTokens bounds each turn's output when Config.MaxTokens is
	// zero (the Messages API requires a bound). Every current model
	// allows it.
	DefaultMaxTokens = 4096
)

// Config configures a [Model]: the Model is required (e.g.
// "claude-opus-4-8"); zero fields take the defaults above.
type Config = agent.ModelConfig

const provider = "Anthropic API"

// Model calls the Messages API. It is safe for concurrent use.
type Model struct {
	client    sdk.Client
	caller    *modelhttp.Caller // retries; knows the model's id
	maxTokens int64
}

var _ agent.Model = (*Model)(nil)

// New returns a Model. It does no I/O.
func New(cfg Config) (*Model, error) {
	caller, err := modelhttp.NewCaller("anthropic", provider, &cfg, DefaultBaseURL, httpError)
	if err != nil {
		return nil, err
	}
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(), // Config is the only source
		option.WithoutOpenTelemetry(),
		option.WithBaseURL(modelhttp.SDKBaseURL(cfg.BaseURL)),
		option.WithHTTPClient(modelhttp.HTTPClient()),
		option.WithMaxRetries(0), // modelhttp retries
		option.WithMiddleware(modelhttp.CheckEventStream(provider)),
	}
	if cfg.Key.Value != "" {
		opts = append(opts, option.WithAPIKey(cfg.Key.Value))
	}
	m := &Model{client: sdk.NewClient(opts...), caller: caller, maxTokens: cfg.MaxTokens}
	if m.maxTokens <= 0 {
		m.maxTokens = DefaultMaxTokens
	}
	return m, nil
}

// ID returns the model id.
func (m *Model) ID() string { return m.caller.Model }

// Generate streams one assistant turn.
func (m *Model) Generate(ctx context.Context, req *agent.Request, text func(string)) (*agent.Response, error) {
	params, err := m.params(req)
	if err != nil {
		return nil, err
	}
	var msg sdk.Message
	err = m.caller.Stream(ctx, text, func(ctx context.Context, emit func(string)) error {
		stream := m.client.Messages.NewStreaming(ctx, params)
		defer stream.Close()
		msg = sdk.Message{}
		stopped := false
		for stream.Next() {
			ev := stream.Current()
			if err := msg.Accumulate(ev); err != nil {
				return modelhttp.Malformed(provider, err)
			}
			switch ev.Type {
			case "content_block_delta":
				if ev.Delta.Type == "text_delta" {
					emit(ev.Delta.Text)
				}
			case "message_stop":
				stopped = true
			}
		}
		if err := stream.Err(); err != nil {
			return modelhttp.StreamError(provider, err)
		}
		if !stopped {
			return modelhttp.ErrStreamCut
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return response(&msg), nil
}

// response converts an accumulated message.
func response(msg *sdk.Message) *agent.Response {
	r := &agent.Response{
		Message: agent.Message{Role: agent.RoleAssistant},
		Usage: agent.Usage{
			InputTokens:  msg.Usage.InputTokens + msg.Usage.CacheCreationInputTokens + msg.Usage.CacheReadInputTokens,
			OutputTokens: msg.Usage.OutputTokens,
		},
	}
	var text strings.Builder
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			input := b.Input
			if len(input) == 0 {
				input = json.RawMessage("{}")
			}
			r.Message.ToolCalls = append(r.Message.ToolCalls, agent.ToolCall{ID: b.ID, Name: b.Name, Input: input})
		}
	}
	r.Message.Text = text.String()
	switch msg.StopReason {
	case sdk.StopReasonEndTurn, sdk.StopReasonStopSequence:
		r.Finish = agent.FinishStop
	case sdk.StopReasonToolUse:
		r.Finish = agent.FinishToolCalls
	case sdk.StopReasonMaxTokens, sdk.StopReasonModelContextWindowExceeded:
		r.Finish = agent.FinishLength
	case sdk.StopReasonRefusal:
		r.Finish = agent.FinishRefusal
	default:
		r.Finish = agent.FinishOther
	}
	return r
}

// params builds the request body. Consecutive messages of one role are
// merged into one (tool results and the next question share a user
// message), as the API expects turns to alternate.
func (m *Model) params(req *agent.Request) (sdk.MessageNewParams, error) {
	p := sdk.MessageNewParams{
		Model:     sdk.Model(m.caller.Model),
		MaxTokens: m.maxTokens,
	}
	if req.Instructions != "" {
		p.System = []sdk.TextBlockParam{{Text: req.Instructions}}
	}
	add := func(role agent.Role, blocks ...sdk.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		if n := len(p.Messages); n > 0 {
			last := &p.Messages[n-1]
			if role == agent.RoleAssistant && last.OfAssistant != nil {
				last.OfAssistant.Content = append(last.OfAssistant.Content, blocks...)
				return
			}
			if role != agent.RoleAssistant && last.OfUser != nil {
				last.OfUser.Content = append(last.OfUser.Content, blocks...)
				return
			}
		}
		if role == agent.RoleAssistant {
			p.Messages = append(p.Messages, sdk.NewAssistantMessage(blocks...))
		} else {
			p.Messages = append(p.Messages, sdk.NewUserMessage(blocks...))
		}
	}
	for _, msg := range req.Messages {
		switch msg.Role {
		case agent.RoleUser:
			// The API refuses empty and whitespace-only text blocks.
			add(msg.Role, sdk.NewTextBlock(nonBlank(msg.Text, "(empty message)")))
		case agent.RoleAssistant:
			var blocks []sdk.ContentBlockParamUnion
			if strings.TrimSpace(msg.Text) != "" {
				blocks = append(blocks, sdk.NewTextBlock(msg.Text))
			}
			if len(blocks) == 0 && len(msg.ToolCalls) == 0 {
				blocks = append(blocks, sdk.NewTextBlock("(no answer)"))
			}
			for _, c := range msg.ToolCalls {
				blocks = append(blocks, sdk.NewToolUseBlock(c.ID, toolInput(c.Input), c.Name))
			}
			add(msg.Role, blocks...)
		case agent.RoleTool:
			var blocks []sdk.ContentBlockParamUnion
			for _, r := range msg.ToolResults {
				blocks = append(blocks, sdk.NewToolResultBlock(r.CallID, nonBlank(r.Content, "(no output)"), r.IsError))
			}
			add(msg.Role, blocks...)
		default:
			return p, fmt.Errorf("anthropic: message with unknown role %q", msg.Role)
		}
	}
	for _, t := range req.Tools {
		schema, err := modelhttp.ToolSchema("anthropic", t)
		if err != nil {
			return p, err
		}
		in := sdk.ToolInputSchemaParam{Properties: schema["properties"], ExtraFields: map[string]any{}}
		if req, ok := schema["required"].([]any); ok {
			for _, r := range req {
				if s, ok := r.(string); ok {
					in.Required = append(in.Required, s)
				}
			}
		}
		for k, v := range schema {
			if k != "properties" && k != "required" && k != "type" {
				in.ExtraFields[k] = v
			}
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: &sdk.ToolParam{
			Name:        t.Name,
			Description: sdk.String(t.Description),
			InputSchema: in,
		}})
	}
	return p, nil
}

// toolInput is a call's input as the API takes it back: a JSON object. A
// call the model wrote as invalid JSON is sent as {} (its error result says
// what was wrong).
func toolInput(in json.RawMessage) any {
	var obj map[string]json.RawMessage
	if json.Unmarshal(in, &obj) != nil || obj == nil {
		return map[string]any{}
	}
	return in
}

// httpError reads the HTTP error behind an SDK error. An error event in
// the middle of a stream arrives with the stream's 200; its type gives the
// status it stands for.
func httpError(err error) *modelhttp.HTTPError {
	var e *sdk.Error
	if !errors.As(err, &e) {
		return nil
	}
	h := modelhttp.ResponseError(e.StatusCode, e.RawJSON(), e.Response)
	if h.Status < 300 {
		var body struct {
			Error struct {
				Type string `json:"type"`
			} `json:"error"`
		}
		_ = json.Unmarshal([]byte(h.Body), &body)
		h.Status = modelhttp.StreamErrorStatus(body.Error.Type)
		h.Header = nil // the stream's headers say nothing about a retry
	}
	return h
}

// nonBlank returns s, or instead when s is empty or only whitespace.
func nonBlank(s, instead string) string {
	if strings.TrimSpace(s) == "" {
		return instead
	}
	return s
}
