package agent

import (
	"encoding/json"
	"log/slog"
)

// Role says who wrote a [Message].
type Role string

const (
	RoleUser      Role = "user"      // the person asking
	RoleAssistant Role = "assistant" // the model: text and tool calls
	RoleTool      Role = "tool"      // results of the assistant's tool calls
)

// Message is one entry of a conversation. A user message has Text; an
// assistant message has Text, ToolCalls or both; a tool message has the
// ToolResults answering the previous assistant message's calls, in call
// order.
type Message struct {
	Role        Role
	Text        string
	ToolCalls   []ToolCall
	ToolResults []ToolResult
}

// UserMessage returns a user message with the given text.
func UserMessage(text string) Message { return Message{Role: RoleUser, Text: text} }

// ToolCall is the model's request to run a tool.
type ToolCall struct {
	// ID is the provider's identifier of the call, echoed in its result.
	ID   string
	Name string
	// Input is the arguments exactly as the model wrote them. It is
	// usually a JSON object, but a model can write invalid JSON; the loop
	// then answers the call with an error result.
	Input json.RawMessage
}

// ToolResult answers one [ToolCall].
type ToolResult struct {
	CallID  string
	Name    string // the tool's name, as called
	Content string // what the model reads: JSON for executeCode, text for errors
	IsError bool   // the tool could not do what was asked
}

// Usage counts tokens. InputTokens includes cached input.
type Usage struct {
	InputTokens  int64
	OutputTokens int64
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{InputTokens: u.InputTokens + v.InputTokens, OutputTokens: u.OutputTokens + v.OutputTokens}
}

// Total is the sum of input and output tokens.
func (u Usage) Total() int64 { return u.InputTokens + u.OutputTokens }

// LogValue groups the counts in logs.
func (u Usage) LogValue() slog.Value {
	return slog.GroupValue(slog.Int64("input", u.InputTokens), slog.Int64("output", u.OutputTokens))
}
