// Package modelhttp holds what the model providers share: retries with
// back-off, per-request timeouts, and turning HTTP failures into
// [agent.APIError]s that say what to do.
package modelhttp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/sandbox/httpretry"
)

// OIDCVar is the variable holding a Vercel OIDC token, which expires.
const OIDCVar = "VERCEL_OIDC_TOKEN"

// HTTPError is an HTTP error response, as a provider reads it from its
// SDK's error.
type HTTPError struct {
	Status int
	Header http.Header
	Body   string
}

// StreamErrorStatus is the HTTP status an error event in the middle of a
// stream (sent with the stream's 200) stands for, from the error's type or
// code as OpenAI- and Anthropic-style APIs name them. Unknown kinds count
// as the request's fault (400), which is not retried.
func StreamErrorStatus(kinds ...string) int {
	for _, k := range kinds {
		switch k {
		case "rate_limit_error", "rate_limit_exceeded":
			return http.StatusTooManyRequests
		case "overloaded_error", "overloaded":
			return 529
		case "timeout_error", "timeout":
			return http.StatusGatewayTimeout
		case "server_error", "api_error", "internal_error", "internal_server_error", "service_unavailable":
			return http.StatusInternalServerError
		case "authentication_error", "invalid_api_key":
			return http.StatusUnauthorized
		case "permission_error":
			return http.StatusForbidden
		case "not_found_error", "model_not_found":
			return http.StatusNotFound
		case "request_too_large":
			return http.StatusRequestEntityTooLarge
		}
	}
	return http.StatusBadRequest
}

// NewCaller checks cfg, fills in its BaseURL (defaultURL when empty) and
// its Retry defaults, and returns the caller of a provider whose SDK
// errors httpErrorOf reads. pkg names the provider's package in errors,
// provider the API in messages (e.g. "OpenAI-compatible API").
func NewCaller(pkg, provider string, cfg *agent.ModelConfig, defaultURL string, httpErrorOf func(error) *HTTPError) (*Caller, error) {
	if cfg.Model == "" {
		return nil, fmt.Errorf("%s: no model id", pkg)
	}
	cfg.BaseURL = cmp.Or(cfg.BaseURL, defaultURL)
	if !strings.HasPrefix(cfg.BaseURL, "http://") && !strings.HasPrefix(cfg.BaseURL, "https://") {
		return nil, fmt.Errorf("%s: base URL %q is not an http(s) URL", pkg, cfg.BaseURL)
	}
	cfg.Retry = cfg.Retry.WithDefaults()
	return &Caller{
		Provider: provider, BaseURL: cfg.BaseURL, Model: cfg.Model, Key: cfg.Key,
		Policy: cfg.Retry, Logger: cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)), HTTPErrorOf: httpErrorOf,
	}, nil
}

// StreamError is the error of a stream that failed: malformed when its
// events could not be decoded, else err as it is, for [Caller.Do] to
// classify.
func StreamError(provider string, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syn) || errors.As(err, &typ) {
		return Malformed(provider, err)
	}
	return err
}

// ResponseError is the HTTP error an SDK's error carries: its status, its
// raw JSON body (read from res when the SDK kept none) and the response's
// headers.
func ResponseError(status int, rawJSON string, res *http.Response) *HTTPError {
	h := &HTTPError{Status: status, Body: rawJSON}
	if res != nil {
		h.Header = res.Header
		if h.Body == "" && res.Body != nil && status >= 300 {
			h.Body = ReadBody(res)
		}
	}
	return h
}

// ToolSchema decodes a tool's input schema.
func ToolSchema(pkg string, t agent.ToolSpec) (map[string]any, error) {
	var schema map[string]any
	if err := json.Unmarshal(t.InputSchema, &schema); err != nil {
		return nil, fmt.Errorf("%s: tool %s: input schema: %w", pkg, t.Name, err)
	}
	return schema, nil
}

// SDKBaseURL is a base URL as the SDKs want it: ending in "/".
func SDKBaseURL(u string) string { return strings.TrimSuffix(u, "/") + "/" }

// Caller makes model calls with retries.
type Caller struct {
	Provider string // for messages, e.g. "OpenAI-compatible API"
	BaseURL  string
	Model    string
	Key      agent.APIKey
	Policy   agent.RetryPolicy // with defaults
	Logger   *slog.Logger
	// HTTPErrorOf extracts the HTTP error behind an SDK error, if any.
	HTTPErrorOf func(error) *HTTPError
}

// ErrStreamCut is returned by an attempt whose event stream ended before
// the response was complete.
var ErrStreamCut = errors.New("the response stream ended before the response was complete")

// Do runs attempt until it succeeds, fails in a way retrying cannot fix, or
// the retries run out. Each attempt gets its own timeout. retryable tells
// whether a stream failure may be retried (false once text reached the
// caller). The error is ctx's when ctx ended, else an *agent.APIError.
func (c *Caller) Do(ctx context.Context, attempt func(ctx context.Context) error, retryable func() bool) error {
	p := c.Policy
	for try := 0; ; try++ {
		actx, cancel := context.WithTimeout(ctx, p.RequestTimeout)
		err := attempt(actx)
		timedOut := actx.Err() != nil && ctx.Err() == nil
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		apiErr := c.classify(err, timedOut)
		delay, again := c.retryDelay(apiErr, err, try)
		if !again || try >= p.MaxRetries || (retryable != nil && !retryable()) {
			apiErr.Retries = try
			apiErr.Partial = again && try < p.MaxRetries
			return apiErr
		}
		c.Logger.WarnContext(ctx, "model: retrying", "provider", c.Provider, "status", apiErr.StatusCode,
			"err", apiErr.Message, "retry", try+1, "delay", delay)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Stream makes a streamed model call with retries, as [Caller.Do]:
// attempt sends the request and reads the stream, handing each piece of
// answer text to emit, which passes it on to text (when not nil). Once
// text has reached the caller, a failure is not retried: the caller's
// copy would repeat it.
func (c *Caller) Stream(ctx context.Context, text func(string), attempt func(ctx context.Context, emit func(string)) error) error {
	sent := false
	emit := func(s string) {
		if s != "" && text != nil {
			sent = true
			text(s)
		}
	}
	return c.Do(ctx, func(ctx context.Context) error { return attempt(ctx, emit) }, func() bool { return !sent })
}

// retryDelay says whether and after how long err may be retried.
func (c *Caller) retryDelay(apiErr *agent.APIError, err error, try int) (time.Duration, bool) {
	var given *agent.APIError
	if errors.As(err, &given) {
		return 0, false // a provider's own verdict: malformed data and the like
	}
	switch s := apiErr.StatusCode; {
	case s == 0:
		// connection errors, timeouts and cut streams
	case s == http.StatusRequestTimeout, s == http.StatusConflict, s == http.StatusTooManyRequests, s >= 500:
	default:
		return 0, false
	}
	if h := c.httpError(err); h != nil {
		if d, ok := httpretry.RetryAfter(h.Header, time.Now()); ok {
			if d > c.Policy.MaxRetryAfter {
				apiErr.Hint = fmt.Sprintf("The API asks to wait %s before trying again; try later.", d.Round(time.Second))
				return 0, false
			}
			return d, true
		}
	}
	return httpretry.Backoff(try, c.Policy.BaseDelay, c.Policy.MaxDelay, 2), true
}

func (c *Caller) httpError(err error) *HTTPError {
	if c.HTTPErrorOf == nil {
		return nil
	}
	return c.HTTPErrorOf(err)
}

// classify turns err into an APIError with a hint.
func (c *Caller) classify(err error, timedOut bool) *agent.APIError {
	var given *agent.APIError
	if errors.As(err, &given) {
		cp := *given
		cp.Message = c.redact(cp.Message)
		return &cp
	}
	e := &agent.APIError{Provider: c.Provider, Err: err}
	if h := c.httpError(err); h != nil {
		e.StatusCode = h.Status
		e.Message = c.redact(errorMessage(h.Body))
		e.Hint = c.hint(h.Status)
		return e
	}
	switch {
	case timedOut:
		e.Message = fmt.Sprintf("no complete response within %s", c.Policy.RequestTimeout)
		e.Hint = "The API is slow or stuck; try again later."
	case errors.Is(err, ErrStreamCut):
		e.Message = ErrStreamCut.Error()
		e.Hint = "The connection was probably lost; try again."
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
		e.Message = "the connection broke off in the middle of the response (" + err.Error() + ")"
		e.Hint = "Try again."
	default:
		e.Message = c.redact(connMessage(err))
		e.Hint = fmt.Sprintf("Check that %s is reachable and is the right base URL.", c.BaseURL)
	}
	return e
}

// hint says what to do about an HTTP status.
func (c *Caller) hint(status int) string {
	src := c.Key.Source
	if src == "" {
		src = "the configured key"
	}
	switch status {
	case http.StatusUnauthorized:
		if c.Key.Value == "" {
			return fmt.Sprintf("No key was sent, and %s wants one: set SANDPIPER_MODEL_API_KEY.", c.BaseURL)
		}
		if c.Key.Source == OIDCVar {
			return "The key came from " + OIDCVar + ": these tokens expire 12 hours after `vercel env pull` wrote them; run `vercel env pull` again to refresh it, or set AI_GATEWAY_API_KEY."
		}
		return fmt.Sprintf("The API rejected the key from %s; check that it is current and meant for %s.", src, c.BaseURL)
	case http.StatusForbidden:
		return fmt.Sprintf("The key from %s is not allowed to do this (the model %q, or the account's credits or permissions).", src, c.Model)
	case http.StatusNotFound:
		return fmt.Sprintf("Check the model id %q and the base URL %s.", c.Model, c.BaseURL)
	case http.StatusPaymentRequired:
		return "The account behind the key needs credits or billing details."
	case http.StatusTooManyRequests:
		return "The API is rate-limiting this key; wait a little and try again."
	case 529, http.StatusServiceUnavailable:
		return "The API is overloaded; try again shortly."
	}
	if status >= 500 {
		return "The API is failing on its side; try again later."
	}
	return ""
}

// redact removes the key from text that came from the API, just in case.
func (c *Caller) redact(s string) string {
	if k := c.Key.Value; len(k) >= 8 {
		s = strings.ReplaceAll(s, k, "[redacted]")
	}
	return s
}

// errorMessage finds the message in an error body: {"error":{"message":…}}
// (OpenAI, Anthropic), {"error":"…"} or {"message":"…"}; else the body.
func errorMessage(body string) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal([]byte(body), &v) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &inner) == nil && inner.Message != "":
			return clip(inner.Message)
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			return clip(s)
		case v.Message != "":
			return clip(v.Message)
		}
	}
	body = strings.TrimSpace(body)
	if strings.HasPrefix(body, "<") {
		return "" // an HTML error page says nothing useful
	}
	return clip(body)
}

func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	const n = 300
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// connMessage describes a failure to talk to the API.
func connMessage(err error) string {
	var dnsErr *net.DNSError
	var opErr *net.OpError
	switch {
	case errors.As(err, &dnsErr):
		return "cannot resolve " + dnsErr.Name
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return "cannot connect: " + opErr.Err.Error()
	}
	return err.Error()
}

// CheckEventStream is HTTP middleware that rejects a successful response
// that is not an event stream: a base URL pointing at a web page or a
// server that ignored "stream": true.
func CheckEventStream(provider string) func(*http.Request, func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	return func(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		res, err := next(req)
		if err != nil || res.StatusCode >= 300 {
			return res, err
		}
		ct := res.Header.Get("Content-Type")
		if ct == "" {
			return res, nil
		}
		if mt, _, _ := mime.ParseMediaType(ct); mt == "text/event-stream" {
			return res, nil
		}
		res.Body.Close()
		return nil, &agent.APIError{
			Provider:   provider,
			StatusCode: res.StatusCode,
			Message:    fmt.Sprintf("the response is %s, not an event stream", ct),
			Hint:       "Check that the base URL points at the API itself.",
		}
	}
}

// Malformed is the error for a response that cannot be decoded.
func Malformed(provider string, err error) error {
	return &agent.APIError{
		Provider: provider,
		Message:  "malformed response: " + err.Error(),
		Hint:     "Check that the base URL points at a compatible API.",
		Err:      err,
	}
}

// HTTPClient returns a client of the provider's own. It has no timeout:
// the call's own (SANDPIPER_MODEL_TIMEOUT) bounds waiting for headers too,
// and a local server loading a model may take minutes to answer.
func HTTPClient() *http.Client {
	return &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
}

// ReadBody reads the start of an error response's body.
func ReadBody(res *http.Response) string {
	b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	return string(b)
}
