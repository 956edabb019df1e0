package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// Model is a language model that can call tools. Providers (see the
// subpackages openai and anthropic) implement it.
type Model interface {
	// ID names the model, as configured (e.g. "anthropic/claude-opus-4.8").
	ID() string
	// Generate asks for the next assistant turn. It calls text, when not
	// nil, with each piece of answer text as it arrives, from the calling
	// goroutine, before returning. It returns once the turn is complete;
	// a turn cut short (a broken stream) is an error, never a partial
	// response. Cancelling ctx abandons the request at once.
	Generate(ctx context.Context, req *Request, text func(delta string)) (*Response, error)
}

// Request is what a [Model] is asked.
type Request struct {
	Instructions string // the system prompt
	Messages     []Message
	Tools        []ToolSpec
}

// Response is one assistant turn.
type Response struct {
	// Message has RoleAssistant, the turn's text and its tool calls in the
	// order the model made them.
	Message Message
	Usage   Usage
	Finish  Finish
}

// Finish says why a model ended its turn.
type Finish string

const (
	FinishStop      Finish = "stop"       // the model finished its turn
	FinishToolCalls Finish = "tool_calls" // the model wants tool results
	FinishLength    Finish = "length"     // the output token limit cut the turn
	FinishRefusal   Finish = "refusal"    // the provider's safety system ended the turn
	FinishOther     Finish = "other"      // any other reason the provider gave
)

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string
	Description string
	// InputSchema is a JSON Schema for the tool's input object.
	InputSchema json.RawMessage
}

// ModelConfig configures a provider (the subpackages openai and
// anthropic). Zero fields take the provider's defaults.
type ModelConfig struct {
	BaseURL string // the API's (default: the provider's DefaultBaseURL)
	Key     APIKey // sent as a bearer token; Source names it in errors
	Model   string // required: the model's ID, as the API names it
	// MaxTokens bounds each turn's output; zero takes the provider's
	// default (see its package).
	MaxTokens int64
	Retry     RetryPolicy // retries and timeouts
	Logger    *slog.Logger
}

// Defaults for [RetryPolicy].
const (
	DefaultMaxRetries     = 3
	DefaultRetryDelay     = 500 * time.Millisecond // first back-off, doubled each retry
	DefaultMaxRetryDelay  = 30 * time.Second       // longest back-off
	DefaultMaxRetryAfter  = 60 * time.Second       // longest Retry-After honoured; longer gives up
	DefaultRequestTimeout = 3 * time.Minute        // one attempt, streaming included
)

// RetryPolicy bounds the attempts of one model call. Providers retry 408,
// 409, 429 and 5xx responses and broken connections, with exponential
// back-off and jitter, honouring Retry-After. Zero fields take defaults;
// MaxRetries < 0 means no retries.
type RetryPolicy struct {
	MaxRetries     int
	BaseDelay      time.Duration
	MaxDelay       time.Duration
	MaxRetryAfter  time.Duration
	RequestTimeout time.Duration
}

// WithDefaults fills in zero fields.
func (p RetryPolicy) WithDefaults() RetryPolicy {
	p.MaxRetries = max(cmp.Or(p.MaxRetries, DefaultMaxRetries), 0)
	p.BaseDelay = cmp.Or(p.BaseDelay, DefaultRetryDelay)
	p.MaxDelay = cmp.Or(p.MaxDelay, DefaultMaxRetryDelay)
	p.MaxRetryAfter = cmp.Or(p.MaxRetryAfter, DefaultMaxRetryAfter)
	p.RequestTimeout = cmp.Or(p.RequestTimeout, DefaultRequestTimeout)
	return p
}

// APIKey is a model API credential and the environment variable that
// supplied it. Its String, GoString and LogValue methods never show the
// key, so it can be logged and formatted safely.
type APIKey struct {
	Value  string
	Source string // e.g. "SANDPIPER_MODEL_API_KEY"
}

func (k APIKey) String() string {
	if k.Value == "" {
		return "(no key)"
	}
	if k.Source == "" {
		return "(key)"
	}
	return "(key from " + k.Source + ")"
}

// GoString keeps %#v from printing the key.
func (k APIKey) GoString() string { return k.String() }

// LogValue keeps structured logs from printing the key.
func (k APIKey) LogValue() slog.Value { return slog.StringValue(k.String()) }

// APIError is a failure of a model provider's API that retrying did not
// fix. Its message says what to do about it and never contains the key.
type APIError struct {
	Provider   string // "OpenAI-compatible API" or "Anthropic API"
	StatusCode int    // HTTP status; 0 when the failure was not an HTTP error
	Message    string // the provider's own explanation, when it sent one
	Hint       string // what the person running sandpiper can do
	Retries    int    // how many times the request was retried
	// Partial: the failure (a broken connection, a server error) would
	// have been retried, but part of the answer had already been streamed
	// to the caller. The caller may run the call again, discarding it.
	Partial bool
	Err     error // the underlying error, if any
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("model: ")
	b.WriteString(e.Provider)
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ": %d %s", e.StatusCode, statusText(e.StatusCode))
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	} else if e.Err != nil && e.StatusCode == 0 {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	switch {
	case e.Retries == 1:
		b.WriteString(" (after 1 retry)")
	case e.Retries > 1:
		fmt.Fprintf(&b, " (after %d retries)", e.Retries)
	}
	if e.Hint != "" {
		// One full stop between the two, whether the message ended a
		// sentence or not.
		if s := b.String(); !strings.ContainsAny(s[len(s)-1:], ".!?") {
			b.WriteByte('.')
		}
		b.WriteByte(' ')
		b.WriteString(e.Hint)
	}
	return b.String()
}

func (e *APIError) Unwrap() error { return e.Err }

func statusText(code int) string {
	if code == 529 {
		return "Overloaded" // Anthropic's
	}
	if t := http.StatusText(code); t != "" {
		return t
	}
	return "error"
}
